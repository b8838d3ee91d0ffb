package timerwheel

import (
	"math"
	"slices"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// relink moves far bucket f into the near wheel: its records are copied, in
// chunks of RelinkChunk newest first, as new TimerLog records linked into
// their near slots (or further far buckets for parked records), and each
// chunk ends with a relink mark that cuts the copied records off the
// bucket's chain. A chunk and its mark are one atomic group, so a crash
// leaves the bucket either before or after each chunk. Only the small
// TimerLog record moves; the message stays where it is in the CommitLog.
// mu must be held.
//
// Unless mandatory (the load position has reached the bucket), relink stops
// when the call's relink budget is spent, leaving the rest of the chain for
// the next Due: the store lock is never held for a whole large bucket
// ahead of time.
func (s *Store) relink(f int64, mandatory bool) error {
	end := (f + 1) * s.geo.FarSlotMs
	for sl := s.far.at(f); sl != nil; sl = s.far.at(f) {
		if !mandatory && s.relinkBudget <= 0 {
			return nil
		}
		chunk, rest, err := s.collect(sl.head, s.opts.RelinkChunk, true, f)
		if err != nil {
			return err
		}
		slices.Reverse(chunk) // copies keep the original append order
		recs := s.recs[:0]
		next := s.tl.Last() + 1
		var moved counts
		for i := range chunk {
			c := chunk[i]
			moved.add(&c, 1)
			c.Seq = next
			c.Flags = timerlog.FlagCopy
			next++
			s.place(&c, end)
			if err := s.link(&c); err != nil {
				return s.fail(err)
			}
			recs = append(recs, c)
		}
		// The slot may have been reset if the chain was broken; use the
		// counts the walk left.
		n := max(int64(sl.n)-moved.n, 0)
		nc := max(int64(sl.nc)-moved.nc, 0)
		if rest == 0 {
			n, nc = 0, 0
		}
		mark := timerlog.Mark(timerlog.KindRelinkMark, true, f, rest, uint32(n), uint32(nc))
		mark.Seq = next
		mark.Flags |= timerlog.FlagCommit
		recs = append(recs, mark)
		s.farCnt.n -= int64(sl.n) - n
		s.farCnt.nc -= int64(sl.nc) - nc
		s.setSlot(&s.far, f, rest, uint32(n), uint32(nc))
		s.st.relinked += uint64(len(chunk))
		s.relinkBudget -= len(chunk)
		s.recs = recs[:0]
		if err := s.appendRecs(recs); err != nil {
			return err
		}
	}
	if s.far.at(f) == nil {
		s.relinkedUpTo = max(s.relinkedUpTo, end)
	}
	return nil
}

// setSlot applies a mark to a far slot: new head and counts; head 0 empties
// it. mu must be held.
func (s *Store) setSlot(rg *ring, no int64, head uint64, n, nc uint32) {
	i := rg.idx(no)
	sl := &rg.slots[i]
	if sl.no != no {
		return
	}
	if head == 0 {
		rg.clearSlot(i)
		return
	}
	sl.head, sl.n, sl.nc = head, n, nc
}

// move re-appends the whole chain of far bucket f (compaction): a move mark
// empties the bucket, then copies of its records rebuild it at the head of
// the TimerLog, all in one atomic group. It lets the segments holding the
// old records go. mu must be held.
func (s *Store) move(f int64) (int, error) { return s.moveWith(f, nil) }

// moveWith is move; edit, when set, may change each copy before it is
// linked (Reroute points copies at relocated messages). mu must be held.
func (s *Store) moveWith(f int64, edit func(*timerlog.Record)) (int, error) {
	sl := s.far.at(f)
	if sl == nil {
		return 0, nil
	}
	chain, _, err := s.collect(sl.head, math.MaxInt, true, f)
	if err != nil {
		return 0, err
	}
	slices.Reverse(chain)
	recs := s.recs[:0]
	next := s.tl.Last() + 1
	mark := timerlog.Mark(timerlog.KindMoveMark, true, f, 0, 0, 0)
	mark.Seq = next
	next++
	if len(chain) == 0 {
		mark.Flags |= timerlog.FlagCommit
	}
	recs = append(recs, mark)
	s.farCnt.n -= int64(sl.n)
	s.farCnt.nc -= int64(sl.nc)
	s.setSlot(&s.far, f, 0, 0, 0)
	for i := range chain {
		c := chain[i]
		c.Seq = next
		c.Flags = timerlog.FlagCopy
		next++
		if edit != nil {
			edit(&c)
		}
		s.place(&c, s.relinkedUpTo)
		if err := s.link(&c); err != nil {
			return 0, s.fail(err)
		}
		if i == len(chain)-1 {
			c.Flags |= timerlog.FlagCommit
		}
		recs = append(recs, c)
	}
	s.recs = recs[:0]
	if err := s.appendRecs(recs); err != nil {
		return 0, err
	}
	s.st.moved += uint64(len(chain))
	return len(chain), nil
}
