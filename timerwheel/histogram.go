package timerwheel

import "math/bits"

// PendingHistogram counts the pending normal timers (cancels excluded) by
// how far ahead of nowMs they are due, from the wheel's own slot counts:
// counts[i] holds those due before nowMs+edges[i] and not before
// nowMs+edges[i-1] (counts[0]: before nowMs+edges[0], overdue ones
// included), and counts[len(edges)] those due at or after the last edge.
// edges are in ms and ascending. The counts add up to Stats().Pending.
//
// A timer is placed by the start of the slot it is linked into, so the
// resolution is one slot: Options.SlotMs (10 ms) for the near wheel,
// Options.FarSlotMs (10 min) for the far one, whose buckets also park
// timers beyond MaxDelay in the last bucket. Timers already loaded for
// release (the slots the clock reached) count in counts[0].
//
// The cost is one pass over the two rings' ahead bitmaps (64 slots per
// word) plus one step per occupied slot, under the store's lock, whatever
// the number of timers: fit for a console or a gauge read on demand.
func (s *Store) PendingHistogram(nowMs int64, edges []int64) []int64 {
	counts := make([]int64, len(edges)+1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil {
		return counts
	}
	counts[0] += s.readyCnt.n
	histRing(&s.near, s.geo.SlotMs, nowMs, edges, counts)
	histRing(&s.far, s.geo.FarSlotMs, nowMs, edges, counts)
	return counts
}

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
