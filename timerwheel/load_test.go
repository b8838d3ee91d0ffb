package timerwheel

import (
	"math/rand/v2"
	"testing"
)

// TestLoadTogether adds timers due within two seconds in a shuffled order
// (so that the slots' chains interleave in the TimerLog), some of them
// while the slots are being drained, and calls Due every millisecond:
// whatever the load-ahead settings, each timer comes out exactly once, at
// its own millisecond (never before), and the ready heap stays within
// LoadMax plus the slot that had to be loaded whole. Slots are loaded ahead
// only in groups of a burst's size (loadAheadMin records).
func TestLoadTogether(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int // timers; half of them added before the first is due
		aheadMs int64
		max     int
		all     bool // the first due slot brings every slot along
	}{
		{"one slot at a time", 6000, 1, 1, false},
		{"defaults", 6000, 0, 0, false},
		{"defaults, a burst", 40_000, 0, 0, false},
		{"far ahead, small heap", 6000, 10_000, 300, false},
		{"burst, heap bound", 40_000, 10_000, loadAheadMin + 500, false},
		{"few timers, not loaded ahead", 6000, 60_000, 1 << 20, false},
		{"burst, everything at once", 40_000, 60_000, 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t.TempDir())
			opts.LoadAheadMs, opts.LoadMax = tc.aheadMs, tc.max
			s := openStore(t, opts, T0)
			h := newHarness(t, s)
			rng := rand.New(rand.NewPCG(7, uint64(tc.max)))
			n := tc.n
			due := make([]int64, 0, n)
			for range n {
				due = append(due, T0+1000+int64(rng.IntN(2000)))
			}
			perSlot := map[int64]int{}
			var id int64
			add := func(now int64, at ...int64) {
				var batch []Timer
				for _, a := range at {
					id++
					batch = append(batch, timerAt(id, a))
					perSlot[a/DefaultSlotMs]++
				}
				mustAdd(t, s, now, batch...)
			}
			for i := 0; i < n/2; i += 100 {
				add(T0, due[i:i+100]...)
			}
			largest := 0
			for _, c := range perSlot {
				largest = max(largest, c)
			}
			limit := s.opts.LoadMax + largest
			late, added := due[n/2:], 0 // added while draining, to slots loaded or not
			for now := T0 + 990; now <= T0+3100; now++ {
				if len(late) > 0 && now%7 == 0 {
					k := min(len(late), n/150) // all added within about a second
					var at []int64
					for _, a := range late[:k] {
						at = append(at, max(a, now+1))
					}
					add(now, at...)
					late, added = late[k:], added+k
				}
				h.due(now)
				if got := s.ready.Len(); got > limit+added {
					t.Fatalf("at %d the ready heap holds %d records, over LoadMax %d + slot %d + %d late adds",
						now, got, s.opts.LoadMax, largest, added)
				}
				if now == T0+1000 {
					if all := s.ready.Len()+len(h.out) >= n/2; all != tc.all {
						t.Fatalf("at the first due ms %d of %d timers loaded or released, want all: %v",
							s.ready.Len()+len(h.out), n/2, tc.all)
					}
				}
			}
			got := h.delivered()
			if len(got) != int(id) {
				t.Fatalf("released %d distinct timers of %d", len(got), id)
			}
			for tid, c := range got {
				if c != 1 {
					t.Fatalf("timer %d released %d times", tid, c)
				}
			}
			for _, r := range h.out {
				if r.at != r.DeliverMs {
					t.Fatalf("timer %d due %d released at %d", r.CommitLogOffset, r.DeliverMs, r.at)
				}
			}
			if st := s.Stats(); st.Pending != 0 || st.Loaded != 0 {
				t.Fatalf("after drain: %+v", st)
			}
		})
	}
}
