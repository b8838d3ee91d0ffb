package timerwheel

import (
	"fmt"
)

// Reopen recovers a failed store in place, as the CommitLog's Reopen does
// for the CommitLog: a write or sync error (a full disk, an I/O error) left
// the store refusing every call with ErrFailed; once the disk takes writes
// again, Reopen closes the files, opens them afresh with Open's recovery
// (the TimerLog's torn tail repaired, the wheel rebuilt from the snapshot
// and the records after it, dequeue resuming after the last durable
// acknowledgement) and takes that state over. Timers released or
// acknowledged since the last durable checkpoint are released again, as
// after a crash. Counters are kept. A store that is not failed is left as
// it is; a Reopen that fails leaves the store failed (and readable in
// memory: MinCommitLogOffset still covers its timers), to be tried again.
func (s *Store) Reopen(nowMs int64) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.err == nil {
		return nil
	}
	cause := s.err
	n, err := open(s.opts, nowMs)
	if err != nil {
		s.log.Error().Err(err).AnErr("failure", cause).Msg("timer store reopen failed; still failed")
		return fmt.Errorf("timerwheel reopen %s: %w", s.opts.Dir, err)
	}
	_ = s.tl.Close() // the failed handles: what they hold is in the files n read
	_ = s.ck.Close()
	st := s.st
	s.adopt(n)
	st.corrupt += n.st.corrupt
	st.replayed += n.st.replayed
	s.st = st
	s.log.Warn().AnErr("failure", cause).Str("acked", s.acked.String()).Int64("enqueue_queue_offset", s.maxQO).
		Msg("timer store reopened after a failure: releasing again from its durable position")
	return nil
}

// adopt takes over every field of n but the locks (n is discarded).
// TestAdoptTakesEveryField keeps this list complete. mu must be held.
func (s *Store) adopt(n *Store) {
	s.opts, s.geo, s.log, s.tl, s.ck = n.opts, n.geo, n.log, n.tl, n.ck
	s.snapPath, s.tailMs, s.nearSpan = n.snapPath, n.tailMs, n.nearSpan
	s.err, s.closed = n.err, n.closed
	s.near, s.far, s.relinkedUpTo, s.base, s.ringBase = n.near, n.far, n.relinkedUpTo, n.base, n.ringBase
	s.issued, s.acked, s.ackLimit, s.durable = n.issued, n.acked, n.ackLimit, n.durable
	s.ready, s.tombs, s.tombMinHi = n.ready, n.tombs, n.tombMinHi
	s.maxQO, s.durableQO, s.segMin = n.maxQO, n.durableQO, n.segMin
	s.snapSeq, s.flushedSeq, s.sinceSnap, s.wantSnap = n.snapSeq, n.flushedSeq, n.sinceSnap, n.wantSnap
	s.relinkBudget = n.relinkBudget
	s.nearAhead, s.farCnt, s.readyCnt, s.st = n.nearAhead, n.farCnt, n.readyCnt, n.st
	s.recs, s.loadNos, s.chains = n.recs, n.loadNos, n.chains
}

// Failed returns the error that failed the store, nil when it works.
func (s *Store) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
