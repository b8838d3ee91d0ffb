package timerwheel

// DueWithin counts the normal timers (cancels excluded) due before
// nowMs+windowMs and not yet released: those loaded in memory waiting for
// their millisecond (overdue ones included), plus those of the near-wheel
// slots not yet loaded that start before the window ends. It counts by
// slot, so it may include timers of the last slot that are due up to one
// slot width (Options.SlotMs, 10 ms by default) after the window, and a
// timer suppressed by a cancel until its due time. Far-wheel buckets are
// not counted: they are relinked into the near wheel one bucket
// (Options.FarSlotMs, 10 min by default) before they start, so they hold
// timers due within the window only while relinking waits for room.
//
// The cost is one bitmap scan over the window's slots (64 slots per word)
// under the store's lock: fit for a gauge read at scrape time.
func (s *Store) DueWithin(nowMs, windowMs int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil {
		return 0
	}
	n := s.readyCnt.n
	end := floorDiv(nowMs+windowMs, s.geo.SlotMs) // last slot starting before the window ends
	limit := min(end+1, s.base+s.geo.NearSlots)
	for no := s.base; no < limit; no++ {
		next, ok := s.near.nextMarked(no, limit)
		if !ok {
			break
		}
		if sl := s.near.at(next); sl != nil {
			n += int64(sl.n)
		}
		no = next
	}
	return n
}
