package timerwheel

import (
	"fmt"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// Add stores timers (the enqueue-put stage). Every timer becomes one
// TimerLog record linked into the slot of its effective time: the near wheel
// when that time is before the relink boundary, else its far bucket. The
// records are written in TimerLog batches of AddChunk without fsync; Flush makes
// them durable. A timer whose QueueOffset is not above every offset added
// before is skipped as a replay. An invalid timer fails the whole call
// before anything is written. nowMs is recorded as the enqueue time.
func (s *Store) Add(batch []Timer, nowMs int64) error {
	for i := range batch {
		if err := batch[i].Validate(); err != nil {
			return fmt.Errorf("timerwheel add: timer %d of %d: %w", i, len(batch), err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	recs := s.recs[:0]
	next := s.tl.Last() + 1
	for i := range batch {
		t := &batch[i]
		if t.QueueOffset >= 0 {
			if t.QueueOffset <= s.maxQO {
				s.st.dupAdds++
				continue
			}
			s.maxQO = t.QueueOffset
		}
		r := timerlog.Record{
			Seq:       next,
			Kind:      timerlog.Kind(t.Kind),
			Flags:     timerlog.FlagCommit,
			DeliverMs: t.DeliverMs,
			EffMs:     s.effMs(t.Kind, t.DeliverMs),
			AddedMs:   nowMs,
			CLOffset:  t.CommitLogOffset,
			CQOffset:  t.QueueOffset,
			KeyHash:   t.KeyHash,
			Size:      t.Size,
		}
		s.place(&r, s.relinkedUpTo)
		if err := s.link(&r); err != nil {
			return s.fail(err)
		}
		recs = append(recs, r)
		next++
		s.st.added++
		if len(recs) == s.opts.AddChunk {
			if err := s.appendRecs(recs); err != nil {
				return err
			}
			recs = recs[:0]
		}
	}
	s.recs = recs[:0]
	return s.appendRecs(recs)
}

// effMs is the effective time of a new record. A normal timer is due at
// DeliverMs; a cancel is released CancelWindow+1 ms before its DeliverMs so
// that it is active before any target it may suppress. Neither may precede
// the position Due has already released (the timer is then due at once,
// after everything released so far).
func (s *Store) effMs(k Kind, deliverMs int64) int64 {
	eff := deliverMs
	if k == KindCancel {
		eff = satSub(deliverMs, s.geo.CancelWindowMs+1)
	}
	return max(eff, s.issued.Ms)
}

// place chooses the record's wheel and slot for relink boundary rUpTo.
func (s *Store) place(r *timerlog.Record, rUpTo int64) {
	r.Flags &^= timerlog.FlagFar | timerlog.FlagRolled
	if r.EffMs < rUpTo {
		r.Slot = floorDiv(r.EffMs, s.geo.SlotMs)
		return
	}
	r.Flags |= timerlog.FlagFar
	b := floorDiv(r.EffMs, s.geo.FarSlotMs)
	// The usable far window is [rb, rb+FarSlots-1): the ring index of
	// rb+FarSlots-1 is that of the bucket being relinked right now.
	if last := rUpTo/s.geo.FarSlotMs + s.geo.FarSlots - 2; b > last {
		b = last
		r.Flags |= timerlog.FlagRolled
		s.st.rolled++
	}
	r.Slot = b
}

// link makes r the head of its slot and sets r.Prev. A record for a near
// slot that is already loaded goes straight to the ready heap as well.
// mu must be held.
func (s *Store) link(r *timerlog.Record) error {
	rg := &s.near
	if r.Far() {
		rg = &s.far
	}
	sl := &rg.slots[rg.idx(r.Slot)]
	if sl.no != r.Slot || sl.empty() {
		if !sl.empty() && (r.Far() || sl.no >= s.ringBase) {
			return fmt.Errorf("timerwheel: slot %d (far %v) collides with live slot %d", r.Slot, r.Far(), sl.no)
		}
		*sl = slot{no: r.Slot, first: r.Seq, minCL: noCL}
	}
	r.Prev = sl.head
	sl.head = r.Seq
	sl.noteCL(r)
	setBit(rg.occ, rg.idx(r.Slot))
	if r.Kind == timerlog.KindCancel {
		sl.nc++
	} else {
		sl.n++
	}
	switch {
	case r.Far():
		s.farCnt.add(r, 1)
		rg.mark(r.Slot)
	case r.Slot >= s.base:
		s.nearAhead.add(r, 1)
		rg.mark(r.Slot)
	default: // slot already loaded: release from memory, the chain is for recovery
		s.ready.push(*r)
		s.readyCnt.add(r, 1)
	}
	return nil
}

// RewindEnqueue lowers the enqueue position (Checkpoint.EnqueueQueueOffset)
// to next-1 when it claims queue offsets from next on: at start, after a
// crash cut the CommitLog's tail, the timer queue's offsets from next on
// are handed out again to new timer messages, which Add would otherwise
// skip as replays. The records that claimed them stay in the wheel; the
// dequeue side checks every released timer against the record it names
// before delivering it, so those whose message is gone are dropped then.
// It returns the position before the call.
func (s *Store) RewindEnqueue(next int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.maxQO
	if next-1 < s.maxQO {
		s.maxQO = next - 1
		s.log.Warn().Int64("enqueue_queue_offset", was).Int64("rewound_to", s.maxQO).
			Msg("timer enqueue position rewound to what the CommitLog holds (its tail was lost)")
	}
	return was
}
