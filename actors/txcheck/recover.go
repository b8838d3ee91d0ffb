package txcheck

// Start, the restart scan, and the persisted state.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// saveEvery forces a state write once ScanFrom could move this far (so a
// broker without transactions does not re-scan much after a crash, while
// writing the file rarely).
const saveEvery = 64 << 20

// restartFloorFor bounds how long a restarted instance waits for the
// writer's answers to its predecessor's appends.
const restartFloorFor = time.Minute

// start loads the persisted state, applies the ends stored after its
// ScanFrom, and reads the half queue.
func (s *Stage) start() {
	s.epoch = s.sh.epoch.Add(1)
	s.pending, s.endedAhead = map[int64]*halfTx{}, map[int64]bool{}
	s.inflight, s.recent, s.recentOrder, s.recentAt = map[uint64]int64{}, map[int64]Outcome{}, nil, 0
	s.undurable = nil // what a crash could lose is scanned again below (the persisted ScanFrom is below it)
	s.restartFloor = -1
	s.opts.Kicker.pending.Store(false) // a kick sent to a stopped instance is lost; start reads everything anyway
	cl := s.opts.Store.CommitLog
	st, found, err := meta.LoadTransactionState(s.opts.Store.FS, s.opts.StatePath, meta.WithLogger(s.opts.Logger))
	if err != nil {
		panic(fmt.Errorf("transaction stage: %w", err))
	}
	if !found {
		st = s.initialState()
	}
	s.halfNext, s.scanFrom = st.HalfNext, st.ScanFrom
	for _, p := range st.Pending {
		h, err := s.readHalfAt(p.CommitLogOffset)
		if err != nil || h.rec.QueueOffset != p.QueueOffset {
			s.opts.Metrics.Unreadable.Inc()
			s.opts.Logger.Error().Err(err).Int64("half_offset", p.QueueOffset).Int64("commitlog_offset", p.CommitLogOffset).
				Msg("open transaction's half message unreadable; dropped")
			continue
		}
		s.pending[p.QueueOffset] = s.newTx(h, p.QueueOffset, p.Checks)
	}
	for _, q := range st.EndedAhead {
		s.endedAhead[q] = true
	}
	end := cl.MaxOffset()
	// The half queue's end, taken after end: every half message an op
	// record before end names lies below it, unless a crash took it.
	ends, err := s.opts.Store.QueueEnds(s.opts.Store.Dispatched.Load())
	if err != nil {
		panic(fmt.Errorf("transaction stage: half queue end: %w", err))
	}
	s.scanHalfEnd, s.scanningRestart = ends.End(meta.TopicTransHalf, 0), true
	n, err := s.scan(st.ScanFrom, end)
	s.scanningRestart = false
	if err != nil {
		panic(fmt.Errorf("transaction stage: restart scan: %w", err))
	}
	if s.epoch > 1 {
		// Appends of the previous instance may still be queued at the
		// writer: they land at or after end.
		s.restartFloor, s.restartUntil = end, s.now().Add(restartFloorFor)
	}
	for s.readHalf() {
	}
	s.opts.Metrics.Pending.Set(float64(len(s.pending)))
	s.opts.Logger.Info().Int64("half_next", s.halfNext).Int("open", len(s.pending)).Int64("scan_from", st.ScanFrom).
		Int64("scanned_bytes", end-max(st.ScanFrom, cl.MinOffset())).Int("ends_found", n).Bool("state_found", found).
		Msg("transaction stage resuming")
	s.dirty = true
	s.checkpoint(false)
	s.timer.Arm(s.opts.Tick, tick{})
}

// initialState is the state without a file: from the first half message
// (and a scan from its position), or from the CommitLog end when there is
// no half queue yet.
func (s *Stage) initialState() meta.TransactionState {
	st := meta.TransactionState{Version: meta.TransactionStateVersion, ScanFrom: s.opts.Store.CommitLog.MaxOffset()}
	if hq := s.halfQueue(); hq != nil {
		st.HalfNext = hq.MinOffset()
		st.ScanFrom = s.opts.Store.CommitLog.MinOffset()
		if units, err := hq.Read(st.HalfNext, 1); err == nil && len(units) == 1 {
			st.ScanFrom = units[0].Offset
		}
	}
	return st
}

// scan applies the ends stored in [from, to): op records, committed
// messages and discard copies. It returns how many it found.
func (s *Stage) scan(from, to int64) (int, error) {
	cl := s.opts.Store.CommitLog
	off := max(from, cl.MinOffset())
	found := 0
	for off < to {
		recs, offs, next, err := cl.ReadBlock(off, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, commitlog.ErrCorrupt) && s.opts.Store.OnCorruption() == corruption.PolicySkip {
			// Damage (the dispatcher reports it): scan what follows.
			if off, err = cl.NextValid(next); err != nil {
				return found, err
			}
			continue
		}
		if err != nil {
			return found, err
		}
		for i, raw := range recs {
			if offs[i] >= to {
				return found, nil
			}
			found += s.applyStored(raw, offs[i])
		}
		off = next
	}
	return found, nil
}

// staleEnd reports, during the restart scan, whether the op record at off
// naming half queue offset q ends a half message a crash took: a crash that
// kept the CommitLog's pages out of order can keep an op record and lose
// its half message at the half queue's tail, whose offset then goes to the
// next half message. The half stored at q is after the op record, or (not
// dispatched yet) q is past the half queue's end at the start. A half
// stored while the scan runs and not dispatched yet is not told apart.
func (s *Stage) staleEnd(q, off int64) bool {
	if !s.scanningRestart {
		return false
	}
	if hq := s.halfQueue(); hq != nil {
		if units, err := hq.Read(q, 1); err == nil && len(units) == 1 {
			return units[0].Offset > off
		}
	}
	return q >= s.scanHalfEnd
}

// applyStored applies one stored record if it ends a transaction.
func (s *Stage) applyStored(raw []byte, off int64) int {
	topic, err := message.PeekTopic(raw)
	if err != nil {
		return 0
	}
	switch {
	case topic == meta.TopicTransOpHalf:
		r, _, err := message.Decode(raw)
		if err != nil {
			return 0
		}
		if tags, _ := message.LookupProperty(r.Properties, message.PropTags); tags != OpTag {
			return 0
		}
		o, _ := message.LookupProperty(r.Properties, PropOutcome)
		outcome := parseOutcome(o)
		if outcome == 0 {
			outcome = Rollback // an op record without outcome ends the transaction all the same
		}
		qs := ParseOpBody(r.Body)
		applied := 0
		for _, q := range qs {
			if s.staleEnd(q, off) {
				s.opts.Logger.Warn().Int64("half_offset", q).Int64("half_end", s.scanHalfEnd).Int64("commitlog_offset", off).
					Msg("op record of a half message the commitlog does not hold; ignored")
				continue
			}
			s.markEnded(q, outcome)
			applied++
		}
		return applied
	case topic == meta.TopicTransCheckMaxTime,
		message.TransactionType(message.PeekSysFlag(raw)) == message.SysFlagTransactionCommit:
		r, _, err := message.Decode(raw)
		if err != nil {
			return 0
		}
		h, err := s.readHalfAt(r.PreparedTransactionOffset)
		if err != nil {
			return 0 // not ours (a client may set the COMMIT bits itself)
		}
		uniq, _ := message.LookupProperty(r.Properties, message.PropUniqKey)
		if uniq != h.props[message.PropUniqKey] {
			return 0
		}
		outcome := Commit
		if topic == meta.TopicTransCheckMaxTime {
			outcome = Discard
		}
		s.markEnded(h.rec.QueueOffset, outcome)
		return 1
	}
	return 0
}

// checkpoint persists the state when it changed (or ScanFrom could move
// far), and publishes the watermark. final: the stage is stopping.
func (s *Stage) checkpoint(final bool) {
	cl := s.opts.Store.CommitLog
	scanFrom := cl.MaxOffset()
	for _, floor := range s.inflight {
		scanFrom = min(scanFrom, floor)
	}
	durable := s.opts.Store.DurableEnd()
	s.undurable = slices.DeleteFunc(s.undurable, func(u undurableEnd) bool { return u.end <= durable })
	for _, u := range s.undurable {
		scanFrom = min(scanFrom, u.floor)
	}
	if s.restartFloor >= 0 {
		if s.now().After(s.restartUntil) {
			s.restartFloor = -1
		} else {
			scanFrom = min(scanFrom, s.restartFloor)
		}
	}
	idle := int64(-1) // the scan start when no end is in flight
	if len(s.inflight) == 0 && s.restartFloor < 0 {
		idle = scanFrom
	}
	if len(s.undurable) > 0 {
		s.dirty = true // saved again once those ends are durable
	}
	if s.dirty || scanFrom-s.scanFrom >= saveEvery || (final && scanFrom != s.scanFrom) {
		st := s.state(scanFrom)
		if err := meta.SaveTransactionState(s.opts.Store.FS, s.opts.StatePath, st); err != nil {
			s.opts.Logger.Error().Err(err).Msg("transaction state not saved; retrying at the next tick")
		} else {
			s.dirty, s.scanFrom = false, scanFrom
		}
	}
	s.publishWatermark(idle)
}

// state is the persisted form of the stage's state.
func (s *Stage) state(scanFrom int64) meta.TransactionState {
	st := meta.TransactionState{Version: meta.TransactionStateVersion, HalfNext: s.halfNext, ScanFrom: scanFrom,
		Pending: make([]meta.PendingTransaction, 0, len(s.pending))}
	open := map[int64]bool{}
	for q, tx := range s.pending {
		st.Pending = append(st.Pending, meta.PendingTransaction{QueueOffset: q, CommitLogOffset: tx.cl, Checks: tx.checks})
		open[q] = true
	}
	for _, u := range s.undurable { // ended, but not durably yet: still open after a crash
		if !open[u.q] {
			st.Pending = append(st.Pending, meta.PendingTransaction{QueueOffset: u.q, CommitLogOffset: u.cl, Checks: u.checks})
			open[u.q] = true
		}
	}
	slices.SortFunc(st.Pending, func(a, b meta.PendingTransaction) int { return cmp.Compare(a.QueueOffset, b.QueueOffset) })
	for q := range s.endedAhead {
		if q >= s.halfNext && !open[q] {
			st.EndedAhead = append(st.EndedAhead, q)
		}
	}
	slices.Sort(st.EndedAhead)
	return st
}

// publishWatermark stores the smallest CommitLog offset still needed: open
// transactions' half messages, the half messages not read yet, and the
// persisted restart-scan start. With nothing open, nothing unread and no
// end in flight, a restart scan can only meet ends of transactions already
// forgotten, so the persisted start (saved only every saveEvery bytes when
// idle) is not needed: the watermark is then the current scan start, and
// CommitLog retention is not held back by a broker that has no
// transactions. idle is the current scan start when no end is in flight,
// else -1.
func (s *Stage) publishWatermark(idle int64) {
	if s.opts.Watermark == nil {
		return
	}
	low := s.scanFrom
	unread := false
	for _, tx := range s.pending {
		low = min(low, tx.cl)
	}
	if hq := s.halfQueue(); hq != nil {
		if units, err := hq.Read(s.halfNext, 1); err == nil && len(units) == 1 {
			low = min(low, units[0].Offset)
			unread = true
		}
	}
	if len(s.pending) == 0 && !unread && idle >= 0 {
		low = max(low, idle)
	}
	s.opts.Watermark.v.Store(low)
}
