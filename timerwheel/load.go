package timerwheel

import (
	"math"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// maxLoadChains caps the slots loaded together in one pass.
const maxLoadChains = 1024

// loadAheadMin is the fewest records a group of slots must hold for the
// slots not yet due to be loaded with it. A steady flow (a few hundred
// timers a slot) is loaded slot by slot as before, from the block cache:
// loading it ahead would only move work into fewer, longer Due calls, and
// the first of them reads the whole TimerLog in one go. A burst is what
// gains from one pass for many slots. (A variable for tests.)
var loadAheadMin = 8192

// loadFrom loads the due near slot at s.base into the ready heap, with the
// marked slots after it (below lim) that are already due or, when the group
// holds at least loadAheadMin records, start within LoadAheadMs of nowMs,
// as long as the ready heap stays within LoadMax records (the slot at
// s.base is loaded whatever its size). It returns the last slot loaded. mu
// must be held.
func (s *Store) loadFrom(nowMs, lim int64) (int64, error) {
	g := &s.geo
	nos := append(s.loadNos[:0], s.base)
	budget := s.opts.LoadMax - s.ready.Len()
	total, due, dueTotal := 0, 1, 0 // records in nos; slots of nos already due, their records
	nowSlot := floorDiv(nowMs, g.SlotMs)
	if sl := s.near.at(s.base); sl != nil {
		budget -= int(sl.n + sl.nc)
		total = int(sl.n + sl.nc)
	}
	dueTotal = total
	aheadLim := min(lim, floorDiv(nowMs+s.opts.LoadAheadMs, g.SlotMs)+1)
	for no := s.base + 1; no < aheadLim && len(nos) < maxLoadChains; {
		next, ok := s.near.nextMarked(no, aheadLim)
		if !ok {
			break
		}
		n := 0
		if sl := s.near.at(next); sl != nil {
			n = int(sl.n + sl.nc)
		}
		if n > budget {
			break
		}
		budget, total = budget-n, total+n
		if next <= nowSlot {
			due, dueTotal = due+1, dueTotal+n
		}
		nos, no = append(nos, next), next+1
	}
	if total < loadAheadMin {
		nos = nos[:due] // not a burst: only what is due now
		total = dueTotal
	}
	s.loadNos = nos[:0]
	return nos[len(nos)-1], s.loadSlots(nos)
}

// loadSlots moves the records of the near slots nos into the ready heap,
// walking their chains together (walkChains). Records at or before the
// issued position (met again after Rewind or recovery) are skipped, except
// cancels whose window is still open: those are re-activated. mu must be
// held.
func (s *Store) loadSlots(nos []int64) error {
	chains := s.chains[:0]
	total, lo := 0, uint64(math.MaxUint64)
	for _, no := range nos {
		sl := s.near.at(no)
		s.near.unmark(no)
		if sl == nil {
			continue
		}
		s.nearAhead.n -= int64(sl.n)
		s.nearAhead.nc -= int64(sl.nc)
		if sl.head != 0 {
			total += int(sl.n + sl.nc)
			lo = min(lo, sl.first)
			chains = append(chains, chain{seq: sl.head, no: no})
		}
	}
	s.ready.grow(total)
	err := s.walkChains(&chains, total, lo, false, func(r *timerlog.Record) {
		if !s.issued.Less(Cursor{Ms: r.EffMs, Seq: r.Seq}) {
			if r.Kind == timerlog.KindCancel && r.DeliverMs+s.geo.CancelWindowMs >= s.issued.Ms {
				s.activate(r)
			}
			return
		}
		s.ready.push(*r)
		s.readyCnt.add(r, 1)
	})
	s.chains = chains[:0]
	return err
}

// walkChains walks several chains of one wheel at once, newest record
// first across all of them: each step reads the highest sequence any chain
// is at, so the walk goes down the TimerLog once and every block is read
// once, however the chains interleave (walking them one after the other
// reads a block once per chain that passes through it). total is about how
// many records the chains hold; when they are dense in the span they cover,
// the log is read in larger runs (timerlog.Log.ReadDense); lo is at or
// below their oldest record. Damage is handled per chain as in walk. mu
// must be held.
func (s *Store) walkChains(h *chainHeap, total int, lo uint64, far bool, fn func(*timerlog.Record)) error {
	if len(*h) == 0 {
		return nil
	}
	h.init()
	dense := denseWalk(total, (*h)[0].seq, max(lo, s.tl.First()))
	for len(*h) > 0 {
		c := &(*h)[0]
		r, next, ok, err := s.step(c.seq, far, c.no, dense)
		if err != nil {
			return err
		}
		if ok {
			fn(&r)
		}
		if next == 0 {
			h.pop()
		} else {
			c.seq = next
			h.down(0)
		}
	}
	return nil
}

// denseWalk reports whether a walk of about total records between
// sequences lo and top touches enough of every run of blocks that reading
// runs is cheaper than reading single blocks: a few records per ReadDense
// run on average.
func denseWalk(total int, top, lo uint64) bool {
	if top < lo {
		return false
	}
	return uint64(total)*timerlog.DenseRunEntries >= 4*(top-lo+1)
}

// chain is one slot's position in a walk of several chains.
type chain struct {
	seq uint64 // next record to read (0: done)
	no  int64  // the slot
}

// chainHeap orders chains by their next sequence, highest first.
type chainHeap []chain

func (h chainHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h chainHeap) down(i int) {
	n := len(h)
	for {
		l, m := 2*i+1, i
		if l < n && h[l].seq > h[m].seq {
			m = l
		}
		if l+1 < n && h[l+1].seq > h[m].seq {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *chainHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
}
