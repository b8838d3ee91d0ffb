package pop

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Invisibility deadlines live on the broker's timer wheel. Each pop (one
// record per queue and pop) and each change of invisible time stores a
// timer message due at the deliveries' deadline, whose real topic is
// ReviveTopic; when the wheel delivers it, the dispatch stage indexes it
// and the pipeline tells the stage (Revived), which reads the new revive
// records and makes the deliveries they name visible again, if they are
// still the live ones (same popTime) and past their deadline. A revive
// record for a delivery acked or changed since is ignored. The wheel never
// fires early; a record that does come before its delivery's deadline
// (another popTime's record) is checked again by the stage's tick.

// ReviveTopic is the system topic the wheel delivers the pop deadlines to.
const ReviveTopic = timer.PopReviveTopic

// Revived tells the stage the wheel delivered revive records.
type Revived struct{}

// reviveFailed tells the stage a revive timer was not stored: its
// deliveries are made visible at once (their pop was answered an error).
type reviveFailed struct{ entries []entry }

// revive is one revive record: the deliveries of one queue popped (or
// changed) at popTime with invisible.
type revive struct {
	key       qkey
	popTime   int64
	invisible int64
	offs      []int64
}

func (r revive) deadline() int64 { return r.popTime + r.invisible }

// body is "v1 group topic queue popTime invisible off,off,...".
func (r revive) body() string {
	offs := make([]string, len(r.offs))
	for i, o := range r.offs {
		offs[i] = strconv.FormatInt(o, 10)
	}
	return fmt.Sprintf("v1 %s %s %d %d %d %s", r.key.group, r.key.topic, r.key.queue, r.popTime, r.invisible,
		strings.Join(offs, ","))
}

// encode returns the timer record of r for the timer topic.
func (r revive) encode(nowMs int64) ([]byte, error) {
	props := map[string]string{}
	topic, qid := timer.ToTimerTopic(props, r.deadline(), ReviveTopic, 0)
	rec := message.Record{Topic: topic, QueueID: qid, Body: []byte(r.body()), BornTimestamp: nowMs,
		StoreTimestamp: nowMs, Properties: message.EncodeProperties(props)}
	return rec.Encode(nil)
}

func parseRevive(body []byte) (revive, error) {
	f := strings.Fields(string(body))
	if len(f) != 7 || f[0] != "v1" {
		return revive{}, fmt.Errorf("pop revive: bad record %q", body)
	}
	q, err := strconv.ParseInt(f[3], 10, 32)
	if err != nil {
		return revive{}, fmt.Errorf("pop revive: record %q queue: %w", body, err)
	}
	r := revive{key: qkey{f[1], f[2], int32(q)}}
	if r.popTime, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return revive{}, fmt.Errorf("pop revive: record %q popTime: %w", body, err)
	}
	if r.invisible, err = strconv.ParseInt(f[5], 10, 64); err != nil {
		return revive{}, fmt.Errorf("pop revive: record %q invisibleTime: %w", body, err)
	}
	for _, s := range strings.Split(f[6], ",") {
		o, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return revive{}, fmt.Errorf("pop revive: record %q offset: %w", body, err)
		}
		r.offs = append(r.offs, o)
	}
	return r, nil
}

// revivesOf groups the pop and change entries by queue and deadline.
func revivesOf(entries []entry) []revive {
	type rk struct {
		key                qkey
		popTime, invisible int64
	}
	idx := map[rk]int{}
	var out []revive
	for _, en := range entries {
		if en.kind != 'P' && en.kind != 'C' && en.kind != 'B' {
			continue
		}
		k := rk{en.key, en.popTime, en.invisible}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, revive{key: en.key, popTime: en.popTime, invisible: en.invisible})
		}
		out[i].offs = append(out[i].offs, en.off)
	}
	return out
}

// record appends entries to the journal and their deadlines to the wheel,
// both at once, and calls done once both are stored (the first error
// otherwise). A deadline that could not be stored makes its deliveries
// visible at once.
func (e *Engine) record(entries []entry, done func(error)) {
	revs := revivesOf(entries)
	if e.opts.Append == nil { // no writer, no wheel (tests): the tick's heap
		for _, r := range revs {
			for _, off := range r.offs {
				e.heap.add(deadlineEntry{at: r.deadline(), key: r.key, off: off, popTime: r.popTime})
			}
		}
		done(nil)
		return
	}
	if len(revs) == 0 {
		e.journal(entries, done)
		return
	}
	var left atomic.Int32
	left.Store(2)
	var first atomic.Pointer[error]
	finish := func(err error) {
		if err != nil {
			first.CompareAndSwap(nil, &err)
		}
		if left.Add(-1) == 0 {
			if p := first.Load(); p != nil {
				done(*p)
				return
			}
			done(nil)
		}
	}
	e.armRevives(revs, func(err error) {
		if err != nil && e.self != nil {
			e.self.Send(&reviveFailed{entries: entries})
		}
		finish(err)
	})
	e.journal(entries, finish)
}

// armRevives stores the timer records of revs; done gets the outcome.
func (e *Engine) armRevives(revs []revive, done func(error)) {
	now := e.opts.Now().UnixMilli()
	recs := make([][]byte, 0, len(revs))
	for _, r := range revs {
		b, err := r.encode(now)
		if err != nil {
			done(fmt.Errorf("pop revive: encode: %w", err))
			return
		}
		recs = append(recs, b)
	}
	e.opts.Append(&writer.Append{Key: writer.QueueKey{Topic: timer.Topic}, Records: recs, Kind: stats.KindPop, Reply: func(res writer.Result) {
		if res.Err != nil {
			done(fmt.Errorf("pop revive: append: %w", res.Err))
			return
		}
		done(nil)
	}})
}

// readRevives reads the revive records the wheel delivered since the last
// read and makes their live deliveries visible.
func (e *Engine) readRevives(ctx actor.Context) {
	cq := e.opts.Store.Queues.Lookup(ReviveTopic, 0)
	if cq == nil {
		return
	}
	e.reviveNext = max(e.reviveNext, cq.MinOffset())
	if e.reviveNext >= cq.MaxOffset() {
		return // the tick's usual case: nothing new
	}
	now := e.opts.Now().UnixMilli()
	woke := map[qkey]bool{}
	e.reviveNext = e.eachBody(cq, e.reviveNext, "pop revive", func(_ int64, body []byte) {
		r, err := parseRevive(body)
		if err != nil {
			e.opts.Logger.Warn().Err(err).Msg("pop revive: record skipped")
			return
		}
		for _, off := range r.offs {
			if e.expireOne(r.key, off, r.popTime, now, false) {
				woke[qkey{r.key.group, r.key.topic, 0}] = true
				if e.opts.Late != nil {
					e.opts.Late(now - r.deadline())
				}
			}
		}
	})
	e.wake(ctx, woke)
}

// rearm makes the restored deliveries of k past their deadline visible and
// stores new deadlines for the others (a crash may have kept a pop's
// journal entry and lost its timer; a second timer is harmless).
func (e *Engine) rearm(k qkey, s *qstate) {
	now := e.opts.Now().UnixMilli()
	var ens []entry
	offs := make([]int64, 0, len(s.inflight))
	for off := range s.inflight {
		offs = append(offs, off)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	for _, off := range offs {
		d := s.inflight[off]
		e.inflight.Add(1)
		e.modes.Popped(k.group, k.topic, d.deadline())
		if d.deadline() <= now {
			e.expireOne(k, off, d.popTime, now, true)
			continue
		}
		ens = append(ens, entry{kind: 'P', key: k, off: off, popTime: d.popTime, invisible: d.invisible, attempt: d.attempt})
	}
	revs := revivesOf(ens)
	if len(revs) == 0 || e.opts.Append == nil {
		for _, en := range ens { // no wheel (tests): the tick's heap
			e.heap.add(deadlineEntry{at: en.popTime + en.invisible, key: k, off: en.off, popTime: en.popTime})
		}
		return
	}
	e.armRevives(revs, func(err error) {
		if err != nil {
			e.opts.Logger.Error().Err(err).Str("group", k.group).Str("topic", k.topic).Int32("queue", k.queue).
				Msg("pop revive: deadlines of restored deliveries not stored; they become visible at once")
			if e.self != nil {
				e.self.Send(&reviveFailed{entries: ens})
			}
		}
	})
}
