package pop

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Metrics counts the engine's work (read by the pipeline's collectors).
type Metrics struct {
	Pops, Delivered, Acks, Changes, Expiries, Refused, DeadLettered atomic.Int64
	// BatchAcks counts the BatchAck requests (each one journal append,
	// whatever its number of offsets).
	BatchAcks atomic.Int64
	// BackedOff counts the expired deliveries held back by their group's
	// retry policy (backoff.go).
	BackedOff atomic.Int64
}

// Counters returns the engine's counters.
func (e *Engine) Counters() *Metrics { return &e.m }

// maxPopNums bounds maxMsgNums (RocketMQ caps a pop at 32 by default).
const maxPopNums = 32

// pop serves p, parks it, or waits for its queues' starts.
func (e *Engine) pop(p *Pop, ctx actor.Context) {
	queues := e.queuesOf(p)
	if !e.ensure(p, queues, ctx) {
		e.waiting = append(e.waiting, p)
		return
	}
	if p.Mode == ModePeek {
		p.Reply(e.peek(p, queues))
		return
	}
	var res *Result
	if p.Mode == ModeNotify {
		res = &Result{Code: CodeNoMessage, Remark: "No message"}
		if e.hasMessage(p, queues) {
			res = &Result{Code: CodeSuccess, Remark: "has message", Count: 1}
		}
	} else {
		res = e.collect(p, queues)
	}
	now := e.opts.Now()
	if res.Count == 0 && now.Before(p.PollUntil) {
		if e.byConn[p.ConnID] >= e.opts.MaxParkedPerConn {
			p.Reply(&Result{Code: CodePollingFull, Remark: "too many pop requests parked on this connection"})
			return
		}
		e.byConn[p.ConnID]++
		e.parked = append(e.parked, p)
		e.opts.Parked.Add(1)
		return
	}
	if p.Mode == ModeNotify {
		p.Reply(res)
		return
	}
	e.m.Pops.Add(1)
	e.record(res.entries, func(err error) {
		if err != nil {
			// The deliveries stay in flight and expire: nothing is lost.
			p.Reply(&Result{Code: failCode(err), Remark: err.Error()})
			return
		}
		p.Reply(res)
	})
}

// queuesOf lists the queues a pop reads, from a rotating start for -1
// (a priority topic's: highest first).
func (e *Engine) queuesOf(p *Pop) []int32 {
	if p.QueueID >= 0 {
		return []int32{p.QueueID}
	}
	n := max(p.Queues, 1)
	if p.Priority {
		out := make([]int32, 0, n)
		for q := n - 1; q >= 0; q-- {
			out = append(out, q)
		}
		return out
	}
	start := int32(e.rr % uint32(n))
	e.rr++
	out := make([]int32, 0, n)
	for i := range n {
		out = append(out, (start+i)%n)
	}
	return out
}

// collect takes up to MaxNums messages from the queues: redeliveries first
// (lowest offset first), then (FIFO) offsets passed over, then offsets
// never popped.
func (e *Engine) collect(p *Pop, queues []int32) *Result {
	now := e.opts.Now().UnixMilli()
	want := min(max(p.MaxNums, 1), maxPopNums)
	res := &Result{Code: CodeNoMessage, Remark: "No message", PopTime: now, InvisibleTime: p.InvisibleMs}
	var starts, offs []string
	for _, q := range queues {
		k := p.key(q)
		s := e.queues[k]
		cq := e.opts.Store.Queues.Lookup(p.Topic, q)
		if s == nil || cq == nil {
			continue
		}
		e.fifoMode(k, s, p.Orderly)
		if m := cq.MinOffset(); s.next < m { // trimmed by retention
			for off := s.committed; off < m; off++ {
				if _, ok := s.inflight[off]; ok {
					e.inflight.Add(-1)
					e.modes.Done(k.group, k.topic)
				}
				s.ack(off)
			}
			s.next = max(s.next, m)
			s.committed = max(s.committed, m)
		}
		before := s.committed
		var taken []string
		first := int64(-1)
		deliver := func(off int64, attempt int32) bool {
			if res.Count >= want {
				return false
			}
			rec, ok, skip := e.read(cq, off, p)
			if skip {
				s.ack(off)
				return true
			}
			if !ok {
				return false
			}
			h := Handle{StartOffset: off, PopTime: now, InvisibleTime: p.InvisibleMs, BrokerName: e.opts.BrokerName, QueueID: q, Offset: off}
			// The read's buffer is reused by the next read: the delivery
			// keeps its own copy (its decoded record points into it).
			rec = append([]byte(nil), rec...)
			r, _, err := message.Decode(rec)
			if err != nil {
				// A record that verified but does not decode: damaged all
				// the same (skipped under on-corruption=skip, stopped at
				// under stop).
				e.opts.Logger.Error().Err(err).Str("topic", p.Topic).Int32("queue", q).Int64("offset", off).
					Stringer("on_corruption", e.opts.Store.OnCorruption()).Msg("pop: a stored message does not decode")
				if e.opts.Store.OnCorruption() != corruption.PolicySkip {
					return false
				}
				s.ack(off)
				return true
			}
			if ok, stop := s.fifo.admit(off, rec); !ok { // FIFO: its message group is busy (fifo.go)
				return !stop
			}
			r.ReconsumeTimes = attempt - 1
			res.Msgs = append(res.Msgs, Delivered{Record: r, Handle: h, Attempt: attempt})
			res.Count++
			d := delivery{popTime: now, invisible: p.InvisibleMs, attempt: attempt, jOff: -1}
			delete(s.visible, off)
			s.inflight[off] = d
			e.inflight.Add(1)
			e.modes.Popped(p.Group, p.Topic, d.deadline())
			res.entries = append(res.entries, entry{kind: 'P', key: k, off: off, popTime: now, invisible: p.InvisibleMs, attempt: attempt})
			if first < 0 {
				first = off
			}
			taken = append(taken, strconv.FormatInt(off, 10))
			return true
		}
		for _, off := range s.visibleSorted() {
			if !deliver(off, s.visible[off]) {
				break
			}
		}
		s.fifo.eachWaiting(func(off int64) bool { return deliver(off, 1) })
		for end := cq.MaxOffset(); s.next < end && res.Count < want; {
			off := s.next
			s.next++
			if !deliver(off, 1) {
				s.next--
				break
			}
		}
		if s.committed != before {
			e.commit(k, s)
		}
		res.RestNum += cq.MaxOffset() - s.next + int64(len(s.visible)+s.fifo.waitingLen())
		e.fifoStopped(k, s)
		if len(taken) > 0 {
			starts = append(starts, "0 "+strconv.Itoa(int(q))+" "+strconv.FormatInt(first, 10))
			offs = append(offs, "0 "+strconv.Itoa(int(q))+" "+strings.Join(taken, ","))
		}
	}
	e.fifoNotes(res.entries)
	if res.Count > 0 {
		res.Code, res.Remark = CodeSuccess, "FOUND"
		res.StartOffsetInfo, res.MsgOffsetInfo = strings.Join(starts, ";"), strings.Join(offs, ";")
		e.m.Delivered.Add(int64(res.Count))
		if e.opts.Consumed != nil {
			e.opts.Consumed(p.Group, p.Topic, res.Count, len(res.Body))
		}
	}
	return res
}

// commit writes the queue's committed offset to the offsets stage.
func (e *Engine) commit(k qkey, s *qstate) {
	if e.opts.Offsets == nil {
		return
	}
	if st := e.opts.Offsets(); st != nil {
		st.Send(&offsets.Commit{Group: k.group, Topic: k.topic, QueueID: k.queue, Offset: s.committed})
	}
}

// read returns the record at queue offset off when it passes p's filter;
// skip means the offset has nothing to deliver (a hole, filtered out, or a
// damaged message under on-corruption=skip) and counts as acked; !ok &&
// !skip stops the pop there (a read error, a damaged consume-queue unit, a
// damaged message under on-corruption=stop): retried by the next pop. A
// record that cannot be read is judged by the pull readers' rule
// (pull.Unreadable), so both models read a queue alike.
func (e *Engine) read(cq *consumequeue.Queue, off int64, p *Pop) (rec []byte, ok, skip bool) {
	units, err := cq.Read(off, 1)
	if err != nil || len(units) == 0 {
		if err != nil {
			e.opts.Logger.Error().Err(err).Str("topic", p.Topic).Int64("offset", off).Msg("pop: consume queue read failed")
		}
		return nil, false, false
	}
	u := units[0]
	if u.IsHole() || !p.Filter.Match(u.TagsCode) {
		return nil, false, true
	}
	recs, states := e.units.ReadChecked(e.opts.Store.CommitLog, units)
	if recs[0] == nil {
		if pull.Unreadable(e.opts.Store, e.opts.Logger, pull.ByPop, cq.ID(), off, u, states[0]) == "" {
			return nil, false, true
		}
		return nil, false, false
	}
	rec = recs[0]
	if p.Filter.NeedsRecord() && !p.Filter.MatchRecord(rec) {
		return nil, false, true
	}
	return rec, true, false
}

// AppendEncoded appends d's record to dst as a POP_MESSAGE body carries
// it: reconsumeTimes = attempt-1 and the receipt handle in property
// POP_CK.
func AppendEncoded(dst []byte, d *Delivered) ([]byte, error) {
	r := d.Record
	r.Properties = message.AppendProperty(append([]byte(nil), r.Properties...), PropPopCK, d.Handle.String())
	return r.Encode(dst)
}

// PropPopCK is the property carrying a popped message's receipt handle.
const PropPopCK = "POP_CK"
