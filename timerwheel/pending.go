package timerwheel

import (
	"math"
	"slices"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// FirstCursor is the position before every timer: Pending(FirstCursor, n)
// lists from the earliest pending timer.
var FirstCursor = Cursor{Ms: math.MinInt64}

// Pending lists up to limit pending normal timers whose dequeue position
// (EffMs, Seq) comes after the cursor after, in dequeue order (by
// effective due time), for a console or an admin listing. A timer is
// pending while the wheel has not released it: released (fired) timers
// are not listed, nor are timers that a cancel already stored will
// suppress (an active tombstone, or a cancel record not yet released with
// the timer's key hash and a DeliverMs within CancelWindow of the
// timer's). next is the position of the last timer returned (pass it back
// for the next page) and more reports whether timers may follow it.
//
// Nothing is kept between calls: each call walks the chains of the slots
// from after's slot on (the ready heap, then the near wheel's slots not yet
// loaded, then the far buckets not yet relinked, each whole, with the
// slots of the CancelWindow before for the cancels) until it holds limit
// timers, under the store's lock. Memory and reads are thus bounded by limit
// plus the records of one slot or far bucket; a page is exact even while
// timers are added and released between calls (each call reads the
// current chains). A timer parked in the last far bucket because its time
// lies beyond the far window is listed with that bucket, possibly before
// timers due earlier.
func (s *Store) Pending(after Cursor, limit int) (timers []Timer, next Cursor, more bool, err error) {
	if limit <= 0 {
		return nil, after, true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, after, false, err
	}
	p := pendingScan{s: s, after: after}
	for i := range s.ready.recs {
		p.note(&s.ready.recs[i])
	}
	g := &s.geo
	w := g.CancelWindowMs
	from := satSub(after.Ms, 2*w+1) // cancels of the timers after `after` lie at or after this
	// The near wheel's slots not yet loaded: [base, ringBase+NearSlots),
	// then the far buckets not yet relinked.
	no := s.base
	if after.Ms != math.MinInt64 {
		no = max(no, floorDiv(from, g.SlotMs))
	}
	full, err := p.ring(&s.near, false, no, s.ringBase+g.NearSlots, limit)
	if err != nil {
		return nil, after, false, err
	}
	if !full {
		fb := s.relinkedUpTo / g.FarSlotMs
		fEnd := fb + g.FarSlots
		if after.Ms != math.MinInt64 {
			fb = max(fb, floorDiv(from, g.FarSlotMs))
		}
		if full, err = p.ring(&s.far, true, fb, fEnd, limit); err != nil {
			return nil, after, false, err
		}
	}
	out := p.live()
	more = full
	if len(out) > limit {
		out, more = out[:limit], true
	}
	next = after
	if len(out) > 0 {
		next = out[len(out)-1].Cursor()
	}
	return out, next, more, nil
}

// pendingScan gathers the candidates and cancels of one Pending call.
type pendingScan struct {
	s       *Store
	after   Cursor
	cands   []Timer
	cancels []timerlog.Record
}

// note takes one record of a chain or of the ready heap.
func (p *pendingScan) note(r *timerlog.Record) {
	switch {
	case r.Kind == timerlog.KindCancel:
		p.cancels = append(p.cancels, *r)
	case r.Kind == timerlog.KindNormal && p.after.Less(Cursor{Ms: r.EffMs, Seq: r.Seq}):
		p.cands = append(p.cands, timerOf(r))
	}
}

// ring walks the ahead slots of rg in [no, end) in groups, each group's
// chains together (walkChains: one pass down the TimerLog), a group
// holding about the records still wanted, and reports whether limit live
// timers are held: every slot not walked yet holds only later timers.
func (p *pendingScan) ring(rg *ring, far bool, no, end int64, limit int) (bool, error) {
	s := p.s
	for {
		var chains chainHeap
		total, lo := 0, uint64(math.MaxUint64)
		for total < limit-len(p.cands) || len(chains) == 0 {
			sl, ok := rg.nextMarked(no, end)
			if !ok {
				break
			}
			no = sl + 1
			if x := rg.at(sl); x != nil {
				chains = append(chains, chain{seq: x.head, no: sl})
				total += int(x.n + x.nc)
				lo = min(lo, x.first)
			}
		}
		if len(chains) == 0 {
			return false, nil
		}
		if err := s.walkChains(&chains, total, lo, far, p.note); err != nil {
			return false, err
		}
		if len(p.cands) >= limit && len(p.live()) >= limit {
			return true, nil
		}
	}
}

// live sorts the candidates and drops those a known cancel suppresses.
func (p *pendingScan) live() []Timer {
	s := p.s
	w := s.geo.CancelWindowMs
	out := p.cands[:0:0]
	for _, t := range p.cands {
		r := timerlog.Record{KeyHash: t.KeyHash, DeliverMs: t.DeliverMs}
		if s.cancelledBy(&r) {
			continue
		}
		cancelled := false
		for i := range p.cancels {
			c := &p.cancels[i]
			if t.KeyHash != 0 && c.KeyHash == t.KeyHash && c.DeliverMs-w <= t.DeliverMs && t.DeliverMs <= c.DeliverMs+w {
				cancelled = true
				break
			}
		}
		if !cancelled {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Timer) int {
		switch {
		case a.Cursor().Less(b.Cursor()):
			return -1
		case b.Cursor().Less(a.Cursor()):
			return 1
		}
		return 0
	})
	return out
}
