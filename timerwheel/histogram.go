package timerwheel

import (
	"math/bits"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// PendingHistogram counts the pending normal timers (cancels excluded) by
// how far ahead of nowMs they are due, from the wheel's own slot counts:
// counts[i] holds those due before nowMs+edges[i] and not before
// nowMs+edges[i-1] (counts[0]: before nowMs+edges[0], overdue ones
// included), and counts[len(edges)] those due at or after the last edge.
// edges are in ms and ascending. The counts add up to Stats().Pending.
//
// A near-wheel timer is placed by the start of its slot (Options.SlotMs,
// 10 ms). A far bucket (Options.FarSlotMs, 10 min) that lies within one
// histogram bucket counts there whole; one that straddles an edge has its
// chain read (its records' own due times), up to HistogramReadBudget
// records a call, so that a timer due in 19 min 40 s lands in the
// [19 min, 20 min) bucket, not at its far bucket's start. Past the budget,
// a straddling bucket counts at its start (the resolution of the slot
// counts alone). Timers already loaded for release (the slots the clock
// reached) count in counts[0].
//
// The cost is one pass over the two rings' ahead bitmaps (64 slots per
// word) plus one step per occupied slot, plus the TimerLog reads of the
// straddling far buckets (at most HistogramReadBudget records), under the
// store's lock: fit for a console or a gauge read on demand.
func (s *Store) PendingHistogram(nowMs int64, edges []int64) []int64 {
	counts := make([]int64, len(edges)+1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil {
		return counts
	}
	counts[0] += s.readyCnt.n
	histRing(&s.near, s.geo.SlotMs, nowMs, edges, counts)
	budget := HistogramReadBudget
	s.histFar(nowMs, edges, counts, &budget)
	return counts
}

// HistogramReadBudget bounds the far-wheel records one PendingHistogram
// call reads to place the timers of a bucket that straddles an edge.
const HistogramReadBudget = 100_000

// histRing adds the ahead slots of r (slot no starts at no*width ms) to
// counts. mu must be held.
func histRing(r *ring, width, nowMs int64, edges, counts []int64) {
	for w, word := range r.ahead {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			sl := &r.slots[w<<6+b]
			if sl.empty() || sl.n == 0 {
				continue
			}
			counts[bucketOf(sl.no*width-nowMs, edges)] += int64(sl.n)
		}
	}
}

// histFar adds the far wheel's ahead buckets to counts: a bucket within
// one histogram bucket by its count, one across an edge by its records'
// effective times while budget lasts. mu must be held.
func (s *Store) histFar(nowMs int64, edges, counts []int64, budget *int) {
	r, width := &s.far, s.geo.FarSlotMs
	for w, word := range r.ahead {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			sl := &r.slots[w<<6+b]
			if sl.empty() || sl.n == 0 {
				continue
			}
			from := sl.no*width - nowMs
			lo, hi := bucketOf(from, edges), bucketOf(from+width-1, edges)
			// A bucket whose timers were parked beyond the far window
			// (FlagRolled) holds times past its end: read it too.
			if lo == hi && !s.parkedIn(sl.no) {
				counts[lo] += int64(sl.n)
				continue
			}
			if !s.histChain(sl, nowMs, edges, counts, budget) {
				counts[lo] += int64(sl.n)
			}
		}
	}
}

// parkedIn reports whether far bucket no is the last of the far window,
// the one timers beyond it are parked in.
func (s *Store) parkedIn(no int64) bool {
	return no >= s.relinkedUpTo/s.geo.FarSlotMs+s.geo.FarSlots-2
}

// histChain places the normal records of far slot sl by their effective
// times; false (and counts untouched) when the budget does not cover the
// chain or the chain does not hold the slot's count of normal records.
// mu must be held.
func (s *Store) histChain(sl *slot, nowMs int64, edges, counts []int64, budget *int) bool {
	total := int(sl.n) + int(sl.nc)
	if total > *budget {
		return false
	}
	*budget -= total
	var effs []int64
	if _, err := s.walk(sl.head, total, true, sl.no, func(r *timerlog.Record) {
		if r.Kind == timerlog.KindNormal {
			effs = append(effs, r.EffMs)
		}
	}); err != nil || len(effs) != int(sl.n) {
		return false
	}
	for _, eff := range effs {
		counts[bucketOf(eff-nowMs, edges)]++
	}
	return true
}

// bucketOf is the index of the first edge above d (len(edges) if none).
func bucketOf(d int64, edges []int64) int {
	lo, hi := 0, len(edges)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if edges[m] <= d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
