package pop

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/stage"

	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// JournalTopic is the system topic of the POP journal: one record per
// pop ("P"), ack ("A") and change ("C") of a delivery, appended through the
// CommitLog writer before the request is answered, replayed at start.
const JournalTopic = "rmq_sys_wheelmq_pop"

// entry is one journal line: "v1 KIND group topic queue offset popTime
// invisibleTime attempt [g:messageGroup]" (space separated; RocketMQ group
// and topic names have no spaces; the tenth field marks a FIFO delivery,
// fifo.go).
type entry struct {
	kind      byte  // 'P', 'A', 'C', 'B' (a back-off: backoff.go)
	jOff      int64 // journal offset (set by the replay)
	key       qkey
	off       int64
	popTime   int64
	invisible int64
	attempt   int32
	fifo      bool   // a FIFO delivery ('P'), of message group group
	group     string // its message group
}

func (e entry) encode() ([]byte, error) {
	line := fmt.Sprintf("v1 %c %s %s %d %d %d %d %d", e.kind, e.key.group, e.key.topic, e.key.queue, e.off,
		e.popTime, e.invisible, e.attempt)
	if e.fifo {
		line += " " + fifoField(e.group)
	}
	r := message.Record{Topic: JournalTopic, Body: []byte(line), BornTimestamp: e.popTime, StoreTimestamp: e.popTime}
	return r.Encode(nil)
}

func parseEntry(body []byte) (entry, error) {
	f := strings.Fields(string(body))
	if (len(f) != 9 && len(f) != 10) || f[0] != "v1" || (f[1] != "P" && f[1] != "A" && f[1] != "C" && f[1] != "B") {
		return entry{}, fmt.Errorf("pop journal: bad entry %q", body)
	}
	n := make([]int64, 5)
	for i := range n {
		v, err := strconv.ParseInt(f[4+i], 10, 64)
		if err != nil {
			return entry{}, fmt.Errorf("pop journal: entry %q field %d: %w", body, 4+i, err)
		}
		n[i] = v
	}
	q, err := strconv.ParseInt(f[4], 10, 32)
	if err != nil {
		return entry{}, fmt.Errorf("pop journal: entry %q queue: %w", body, err)
	}
	en := entry{kind: f[1][0], key: qkey{f[2], f[3], int32(q)}, off: n[1], popTime: n[2], invisible: n[3], attempt: int32(n[4])}
	if len(f) == 10 {
		if en.group, err = parseFIFOField(f[9]); err != nil {
			return entry{}, err
		}
		en.fifo = true
	}
	return en, nil
}

// journal appends entries and calls done once the writer answered (err
// nil: stored under the broker's flush mode). Without a writer (tests)
// done runs at once.
func (e *Engine) journal(entries []entry, done func(error)) {
	if e.opts.Append == nil || len(entries) == 0 {
		done(nil)
		return
	}
	recs := make([][]byte, 0, len(entries))
	for _, en := range entries {
		b, err := en.encode()
		if err != nil {
			done(fmt.Errorf("pop journal: encode: %w", err))
			return
		}
		recs = append(recs, b)
	}
	var self *stage.Stage // told where the pop entries went (compact.go)
	if slices.ContainsFunc(entries, func(en entry) bool { return en.kind == 'P' }) {
		self = e.self
	}
	e.opts.Append(&writer.Append{Key: writer.QueueKey{Topic: JournalTopic}, Records: recs, Kind: stats.KindPop, Reply: func(res writer.Result) {
		if res.Err != nil {
			done(fmt.Errorf("pop journal: append: %w", res.Err))
			return
		}
		if self != nil {
			self.Send(&journaled{entries: entries, first: res.QueueOffset})
		}
		done(nil)
	}})
}

// replay reads the journal's consume queue into e.replayed (per queue, in
// order); initialized applies a queue's entries over its committed offset.
func (e *Engine) replay() {
	e.replayed = map[qkey][]entry{}
	if rq := e.opts.Store.Queues.Lookup(ReviveTopic, 0); rq != nil {
		e.reviveNext = rq.MaxOffset() // earlier ones: see rearm
	}
	cq := e.opts.Store.Queues.Lookup(JournalTopic, 0)
	if cq == nil {
		return
	}
	n := 0
	from := max(cq.MinOffset(), e.replayStartOff)
	e.eachBody(cq, from, "pop journal", func(jOff int64, body []byte) {
		en, err := parseEntry(body)
		if err != nil {
			e.opts.Logger.Warn().Err(err).Msg("pop journal: entry skipped")
			return
		}
		en.jOff = jOff
		e.replayed[en.key] = append(e.replayed[en.key], en)
		n++
	})
	e.replayedEntries.Store(int64(n))
	e.opts.Logger.Info().Int("entries", n).Int("queues", len(e.replayed)).Int64("from", from).Int64("journal_end", cq.MaxOffset()).
		Msg("pop journal replayed")
}

// applyReplayed rebuilds s from the journal's entries of k: deliveries in
// flight keep their deadlines; offsets below the last popped one that the
// journal does not hold in flight were acked or skipped.
func (e *Engine) applyReplayed(k qkey, s *qstate) {
	ens, ok := e.replayed[k]
	if !ok {
		return
	}
	delete(e.replayed, k)
	popJOff := map[int64]int64{}
	for _, en := range ens {
		if en.off < s.committed {
			continue
		}
		switch en.kind {
		case 'P':
			popJOff[en.off] = en.jOff
			s.next = max(s.next, en.off+1)
			if en.off >= s.topOff {
				s.topOff, s.topJOff = en.off, en.jOff
			}
			s.inflight[en.off] = delivery{popTime: en.popTime, invisible: en.invisible, attempt: en.attempt, jOff: en.jOff}
			delete(s.acked, en.off)
		case 'C', 'B':
			if d, ok := s.inflight[en.off]; ok {
				d.popTime, d.invisible = en.popTime, en.invisible
				d.changed, d.backoff = en.kind == 'C', en.kind == 'B'
				s.inflight[en.off] = d
			}
		case 'A':
			delete(s.inflight, en.off)
			s.acked[en.off] = struct{}{}
			if j, ok := popJOff[en.off]; ok {
				s.ackedJOff[en.off] = j
			} else {
				s.ackedJOff[en.off] = en.jOff
			}
		}
	}
	for off := s.committed; off < s.next; off++ {
		if _, ok := s.inflight[off]; !ok {
			s.acked[off] = struct{}{}
		}
	}
	e.replayFIFO(k, s, ens) // FIFO: offsets passed over, not acked
	s.advance()
	e.rearm(k, s)
	e.commit(k, s)
}

// CodeServiceNotAvailable answers requests a replica (or a fenced master)
// cannot serve: POP state is written on the master (RocketMQ's
// SERVICE_NOT_AVAILABLE; clients try the master).
const CodeServiceNotAvailable = wirecode.ServiceNotAvailable

// failCode is the answer to a request whose journal records were not
// stored.
func failCode(err error) int32 {
	if errors.Is(err, writer.ErrNotMaster) || errors.Is(err, writer.ErrFenced) {
		return CodeServiceNotAvailable
	}
	return CodeSystemError
}

// eachBody calls f with the queue offset and body of each record of cq
// from offset from to its end (holes and unreadable records skipped and
// logged under what); it returns the offset it stopped at (the end, or an
// unreadable unit, read again next time).
func (e *Engine) eachBody(cq *consumequeue.Queue, from int64, what string, f func(off int64, body []byte)) int64 {
	off := from
	for end := cq.MaxOffset(); off < end; {
		units, err := cq.Read(off, 256)
		if err != nil || len(units) == 0 {
			e.opts.Logger.Error().Err(err).Int64("offset", off).Msg(what + ": stopped at an unreadable unit")
			return off
		}
		for _, u := range units {
			at := off
			off++
			if u.IsHole() {
				continue
			}
			rec, err := e.opts.Store.CommitLog.ReadAt(u.Offset, u.Size)
			if err != nil {
				e.opts.Logger.Error().Err(err).Int64("commitlog_offset", u.Offset).Msg(what + ": record unreadable, skipped")
				continue
			}
			if body, err := message.PeekBody(rec); err == nil {
				f(at, body)
			}
		}
	}
	return off
}
