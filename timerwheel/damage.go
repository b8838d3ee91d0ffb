package timerwheel

import (
	"errors"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// errFound ends a TimerLog scan early.
var errFound = errors.New("timerwheel: found")

// damagedRecord counts and reports TimerLog record seq that failed its
// checks (counted once per record by the corruption metrics; the store's
// own Corrupt counter counts every meeting). mu must be held, or the store
// not yet shared.
func (s *Store) damagedRecord(seq uint64, err error, action string) {
	s.st.corrupt++
	s.opts.Corruption.Report(s.log, corruption.Range{File: corruption.FileTimerLog, Path: s.tl.Dir(),
		From: int64(seq-1) * timerlog.EntrySize, To: int64(seq) * timerlog.EntrySize,
		Reason: err.Error(), Action: action})
}

// chainDamaged handles a chain record of slot no (far) that could not be
// used: cause says why, bytes whether the record itself failed its checks
// (counted as damaged bytes) rather than being misplaced or gone. It
// returns where the chain goes on: under PolicySkip the previous record of
// the same slot (0: none), under PolicyStop nothing but the failure.
func (s *Store) chainDamaged(seq uint64, far bool, no int64, cause error, bytes bool) (uint64, error) {
	if bytes {
		s.damagedRecord(seq, cause, "skipped; its slot's chain goes on at the previous record of the slot")
	} else {
		s.st.corrupt++
	}
	if s.opts.OnCorruption == corruption.PolicyStop {
		return 0, s.fail(fmt.Errorf("timerwheel: chain of slot %d (far %v) at record %d: %w: %w",
			no, far, seq, corruption.ErrStop, cause))
	}
	next, err := s.chainBelow(seq, far, no)
	if err != nil {
		return 0, s.fail(err)
	}
	s.log.Error().Err(cause).Uint64("seq", seq).Int64("slot", no).Bool("far", far).Uint64("resumes_at", next).
		Msg("timer chain damaged; going on at the previous record of the slot")
	return next, nil
}

// chainBelow returns the newest record of slot no (far) below seq that the
// slot's chain holds, as the chain stood when seq was written: records are
// linked into the slot they carry, and a mark of the slot sets its head to
// the mark's Prev. The search starts at the slot's first record (the
// TimerLog's first when the slot is unknown). 0 means the chain ends. mu
// must be held.
func (s *Store) chainBelow(seq uint64, far bool, no int64) (uint64, error) {
	rg := &s.near
	if far {
		rg = &s.far
	}
	from := s.tl.First()
	if sl := rg.at(no); sl != nil && sl.first > from {
		from = sl.first
	}
	if seq <= from {
		return 0, nil
	}
	var cand uint64
	err := s.tl.Scan(from, func(at uint64, r timerlog.Record, rerr error) error {
		if at >= seq {
			return errFound
		}
		if rerr != nil || r.Slot != no || r.Far() != far {
			return nil
		}
		if r.Kind.IsMark() {
			cand = r.Prev
		} else {
			cand = at
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return 0, fmt.Errorf("timerwheel: look for the record before %d of slot %d: %w", seq, no, err)
	}
	if cand >= seq {
		return 0, nil
	}
	return cand, nil
}
