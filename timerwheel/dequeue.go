package timerwheel

import (
	"errors"
	"fmt"
	"math"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// Due releases up to max timers that are due at nowMs (the dequeue-get
// stage): normal timers with EffMs <= nowMs in (EffMs, Seq) order, never
// one with DeliverMs > nowMs. Cancels met on the way are applied: their
// targets come back in Batch.Cancelled instead of Batch.Timers. Due loads
// near slots as it reaches them and relinks far buckets one bucket ahead,
// so a burst is served in batches of max from memory.
//
// Due may be called again before the previous batch is acknowledged
// (pipelining); every batch must then be passed to Ack in order. On an
// error the batch may still hold released timers: deliver and Ack them.
func (s *Store) Due(nowMs int64, max int) (Batch, error) {
	if max <= 0 {
		max = DefaultDueMax
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return Batch{}, err
	}
	b := Batch{From: s.issued}
	s.relinkBudget = s.opts.RelinkChunk
	var err error
	for {
		for s.ready.Len() > 0 && s.ready.top().EffMs <= nowMs && b.Len() < max {
			r := s.ready.pop()
			s.readyCnt.add(&r, -1)
			s.issued = Cursor{Ms: r.EffMs, Seq: r.Seq}
			if r.Kind == timerlog.KindCancel {
				s.activate(&r)
				continue
			}
			t := timerOf(&r)
			if s.cancelledBy(&r) {
				b.Cancelled = append(b.Cancelled, t)
			} else {
				b.Timers = append(b.Timers, t)
			}
		}
		if b.Len() >= max {
			break
		}
		var progressed bool
		if progressed, err = s.advance(nowMs); err != nil || !progressed {
			break
		}
	}
	if b.Len() < max {
		s.bumpIssued(nowMs)
	}
	s.expireTombs()
	b.To = s.issued
	s.st.issued += uint64(b.Len())
	return b, err
}

// bumpIssued moves the issued position over everything released: up to
// nowMs, but before the first record not yet released (in the ready heap or
// in a slot not yet loaded), with the current last sequence so that records
// added later sort after it. An idle wheel thus still lets the acknowledged
// position (and with it the retained window) advance. mu must be held.
func (s *Store) bumpIssued(nowMs int64) {
	lim := min(nowMs, s.base*s.geo.SlotMs-1)
	if s.ready.Len() > 0 {
		lim = min(lim, s.ready.top().EffMs-1)
	}
	if c := (Cursor{Ms: lim, Seq: s.tl.Last()}); s.issued.Less(c) {
		s.issued = c
	}
}

func timerOf(r *timerlog.Record) Timer {
	return Timer{
		DeliverMs:       r.DeliverMs,
		CommitLogOffset: r.CLOffset,
		Size:            r.Size,
		Kind:            Kind(r.Kind),
		KeyHash:         r.KeyHash,
		QueueOffset:     r.CQOffset,
		Seq:             r.Seq,
		EffMs:           r.EffMs,
		AddedMs:         r.AddedMs,
	}
}

// activate makes a cancel record's tombstone active. mu must be held.
func (s *Store) activate(r *timerlog.Record) {
	w := s.geo.CancelWindowMs
	t := tomb{lo: satSub(r.DeliverMs, w), hi: r.DeliverMs + w}
	if old, ok := s.tombs[r.KeyHash]; ok {
		t.lo, t.hi = min(t.lo, old.lo), max(t.hi, old.hi)
	}
	s.tombs[r.KeyHash] = t
	s.tombMinHi = min(s.tombMinHi, t.hi)
	s.st.cancels++
}

func (s *Store) cancelledBy(r *timerlog.Record) bool {
	if r.KeyHash == 0 || len(s.tombs) == 0 {
		return false
	}
	t, ok := s.tombs[r.KeyHash]
	return ok && t.lo <= r.DeliverMs && r.DeliverMs <= t.hi
}

// expireTombs drops tombstones no unreleased timer can match any more.
// It scans only when the position has passed the earliest expiry.
func (s *Store) expireTombs() {
	if len(s.tombs) == 0 || s.issued.Ms <= s.tombMinHi {
		return
	}
	s.tombMinHi = math.MaxInt64
	for k, t := range s.tombs {
		if t.hi < s.issued.Ms {
			delete(s.tombs, k)
		} else {
			s.tombMinHi = min(s.tombMinHi, t.hi)
		}
	}
}

// advance relinks far buckets up to one bucket ahead of the load position,
// then loads the next near slot due at nowMs into the ready heap, skipping
// empty slots. It reports false when nothing more can be loaded: everything
// up to nowMs is loaded, or a relink has to wait for the checkpointed ack
// position (Flush) to free near-wheel room. mu must be held.
func (s *Store) advance(nowMs int64) (bool, error) {
	g := &s.geo
	nowSlot := floorDiv(nowMs, g.SlotMs)
	for attempt := 0; ; attempt++ {
		baseMs := s.base * g.SlotMs
		if s.relinkedUpTo+g.FarSlotMs > s.ringBase*g.SlotMs+s.nearSpan {
			s.skipEmptyRetained()
		}
		room := s.ringBase*g.SlotMs + s.nearSpan
		ref := max(baseMs, nowMs)
		for s.relinkedUpTo <= ref+g.FarSlotMs && s.relinkedUpTo+g.FarSlotMs <= room {
			f := s.relinkedUpTo / g.FarSlotMs
			if s.far.at(f) != nil {
				if err := s.relink(f, f*g.FarSlotMs <= baseMs); err != nil {
					return false, err
				}
				if s.far.at(f) != nil {
					break // budget spent: the rest on the next call
				}
				continue
			}
			// Empty: jump to the next bucket with records, staying in the
			// room and no further than needed.
			target := floorDiv(min(room, ref+2*g.FarSlotMs), g.FarSlotMs) * g.FarSlotMs
			if nf, ok := s.far.nextMarked(f+1, f+g.FarSlots); ok {
				target = min(target, nf*g.FarSlotMs)
			}
			s.relinkedUpTo = max(target, s.relinkedUpTo+g.FarSlotMs)
		}
		if s.relinkedUpTo <= ref+g.FarSlotMs && attempt == 0 && s.relinkBudget > 0 {
			// A relink waits for room. What lies before the load position
			// is released, so the issued position may move up and empty
			// retained slots can go (if released slots still hold records,
			// room comes with Ack + Flush).
			s.bumpIssued(nowMs)
			continue
		}
		if s.base > nowSlot {
			return false, nil
		}
		if baseMs < s.relinkedUpTo {
			break
		}
		s.st.stalls++
		return false, nil
	}
	// Slots may be loaded up to the relink boundary, stopping where the
	// next relink is due.
	relinkLim := floorDiv(s.relinkedUpTo-1, g.SlotMs) + 1
	if trig := ceilDiv(s.relinkedUpTo-g.FarSlotMs, g.SlotMs); trig > s.base {
		relinkLim = min(relinkLim, trig)
	}
	last := s.base
	if s.near.marked(s.base) {
		var err error
		if last, err = s.loadFrom(nowMs, relinkLim); err != nil {
			return false, err
		}
	}
	// Jump over empty slots.
	next := last + 1
	lim := min(nowSlot+1, relinkLim)
	if lim > next {
		if no, ok := s.near.nextMarked(next, lim); ok {
			next = no
		} else {
			next = lim
		}
	}
	s.base = next
	return true, nil
}

// skipEmptyRetained moves the oldest retained near slot over empty slots
// (never past the load position or the cancel tail of the issued
// position): only slots holding records need to be kept for recovery, so
// an idle stretch does not hold relinking back until the next Flush.
// mu must be held.
func (s *Store) skipEmptyRetained() {
	lim := min(s.base, floorDiv(s.issued.Ms-s.tailMs, s.geo.SlotMs))
	if lim <= s.ringBase {
		return
	}
	if no, ok := s.near.nextOcc(s.ringBase, lim); ok {
		s.ringBase = no
	} else {
		s.ringBase = lim
	}
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// walk calls fn for up to limit records of a slot chain from head, newest
// first, and returns the sequence where it stopped (0 at the end of the
// chain). A corrupt or misplaced record is counted and logged; under
// corruption.PolicySkip the chain goes on at the previous record of the
// same slot (chainBelow), so only that record is lost; under PolicyStop the
// store fails. Only I/O errors and stops are returned. mu must be held.
func (s *Store) walk(head uint64, limit int, far bool, no int64, fn func(*timerlog.Record)) (uint64, error) {
	seq := head
	for n := 0; seq != 0 && n < limit; n++ {
		r, next, ok, err := s.step(seq, far, no, false)
		if err != nil {
			return seq, err
		}
		if ok {
			fn(&r)
		}
		seq = next
	}
	return seq, nil
}

// step reads record seq of the chain of slot no (far) and returns it with
// the chain's next sequence. ok is false when the record was damaged or
// misplaced: it is counted and logged, and next is where the chain goes on
// (see walk). dense reads the TimerLog for a walk down many chains at once
// (timerlog.Log.ReadDense). mu must be held.
func (s *Store) step(seq uint64, far bool, no int64, dense bool) (timerlog.Record, uint64, bool, error) {
	read := s.tl.Read
	if dense {
		read = s.tl.ReadDense
	}
	r, err := read(seq)
	damaged := err != nil
	if err == nil && (r.Far() != far || r.Slot != no || r.Kind.IsMark()) {
		err = fmt.Errorf("timerwheel: record %d in chain of slot %d (far %v) belongs to slot %d (far %v, %s): %w",
			seq, no, far, r.Slot, r.Far(), r.Kind, timerlog.ErrCorrupt)
	}
	if err != nil {
		if !errors.Is(err, timerlog.ErrCorrupt) && !errors.Is(err, timerlog.ErrOutOfRange) {
			return r, seq, false, s.fail(err)
		}
		next, serr := s.chainDamaged(seq, far, no, err, damaged && errors.Is(err, timerlog.ErrCorrupt))
		if serr != nil {
			return r, seq, false, serr
		}
		return r, next, false, nil
	}
	return r, r.Prev, true, nil
}

// collect is walk into a slice.
func (s *Store) collect(head uint64, limit int, far bool, no int64) ([]timerlog.Record, uint64, error) {
	var out []timerlog.Record
	rest, err := s.walk(head, limit, far, no, func(r *timerlog.Record) { out = append(out, *r) })
	return out, rest, err
}

// Ack acknowledges a batch returned by Due: its timers were delivered (or
// dropped as cancelled). Batches must be acknowledged in the order Due
// returned them. The acknowledged position becomes durable with the next
// Flush; after a crash, Due releases again exactly the timers after it.
func (s *Store) Ack(b Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if b.From != s.acked || s.issued.Less(b.To) || b.To.Less(b.From) {
		return fmt.Errorf("timerwheel ack %v..%v (acked %v, issued %v): %w", b.From, b.To, s.acked, s.issued, ErrAckOrder)
	}
	s.acked = b.To
	s.st.delivered += uint64(len(b.Timers))
	s.st.cancelled += uint64(len(b.Cancelled))
	return nil
}

// Rewind forgets every batch released but not acknowledged: the next Due
// releases them again. A dequeue stage calls it when it restarts.
func (s *Store) Rewind() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.issued = s.acked
	// Slots below the retained window were empty or acknowledged: the
	// position may start at the window (new records must not land below it).
	if c := (Cursor{Ms: s.ringBase * s.geo.SlotMs}); s.issued.Less(c) {
		s.issued, s.acked = c, c
	}
	return s.resetDequeue()
}

// RewindAck moves the acknowledged position back to c, then rewinds (see
// Rewind): the timers acknowledged after c are released again. The dequeue
// side calls it when the deliveries of acknowledged batches were lost
// without a crash: a replica's CommitLog was truncated under their
// written-back copies. c is never taken below the newest durable
// acknowledged position (whose slots may be gone; LimitDurableAck keeps
// acknowledgements whose copies are not durable from reaching it), nor
// above the current one. The durable limit is lowered to c as well.
func (s *Store) RewindAck(c Cursor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if c.Less(s.durable[1]) {
		s.log.Error().Str("to", c.String()).Str("durable", s.durable[1].String()).
			Msg("timer ack rewind below the durable acknowledged position: rewinding to it")
		c = s.durable[1]
	}
	if c.Less(s.acked) {
		s.acked = c
	}
	if s.ackLimit != nil && s.acked.Less(*s.ackLimit) {
		l := s.acked
		s.ackLimit = &l
	}
	s.issued = s.acked
	if r := (Cursor{Ms: s.ringBase * s.geo.SlotMs}); s.issued.Less(r) {
		s.issued, s.acked = r, r // only empty slots lie below the retained window
	}
	return s.resetDequeue()
}

// resetDequeue rebuilds the load state from the issued position: the ready
// heap and tombstones are dropped, and the slots from CancelWindow*2 before
// the position up to it are loaded again (re-activating cancels). mu must
// be held.
func (s *Store) resetDequeue() error {
	s.ready.reset()
	s.readyCnt = counts{}
	clear(s.tombs)
	s.tombMinHi = math.MaxInt64
	s.base = max(floorDiv(s.issued.Ms-s.tailMs, s.geo.SlotMs), s.ringBase)
	s.nearAhead = counts{}
	clear(s.near.ahead)
	for i := range s.near.slots {
		sl := &s.near.slots[i]
		if sl.empty() {
			continue
		}
		if sl.no < s.ringBase {
			s.near.clearSlot(int64(i))
			continue
		}
		if sl.no >= s.base {
			s.near.mark(sl.no)
			s.nearAhead.n += int64(sl.n)
			s.nearAhead.nc += int64(sl.nc)
		}
	}
	end := floorDiv(s.issued.Ms, s.geo.SlotMs)
	nos := s.loadNos[:0]
	for no := s.base; no <= end; no++ {
		next, ok := s.near.nextMarked(no, end+1)
		if !ok {
			break
		}
		nos, no = append(nos, next), next
	}
	s.loadNos = nos[:0]
	s.base = max(s.base, end+1)
	return s.loadSlots(nos)
}

// NextDue returns a time at or before the earliest moment Due can release
// something (or has relink work to do): arm one timer for it. ok is false
// when the store holds no pending record at all. The result may be in the
// past; after a Due that returned less than max, it is in the future unless
// progress waits for Ack and Flush.
func (s *Store) NextDue() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil {
		return 0, false
	}
	g := &s.geo
	best, ok := int64(math.MaxInt64), false
	if s.ready.Len() > 0 {
		best, ok = s.ready.top().EffMs, true
	}
	if no, found := s.near.nextMarked(s.base, s.base+g.NearSlots); found {
		best, ok = min(best, no*g.SlotMs), true
	} else if s.nearAhead.n+s.nearAhead.nc > 0 {
		// Only slots more than a lap ahead (possible right after recovery).
		best, ok = min(best, (s.base+g.NearSlots)*g.SlotMs), true
	}
	rb := s.relinkedUpTo / g.FarSlotMs
	if f, found := s.far.nextMarked(rb, rb+g.FarSlots); found {
		at := f*g.FarSlotMs - g.FarSlotMs // relinked one bucket ahead
		if (f+1)*g.FarSlotMs > s.ringBase*g.SlotMs+s.nearSpan {
			at = f * g.FarSlotMs // no room for the early relink yet
		}
		best, ok = min(best, at), true
	}
	return best, ok
}
