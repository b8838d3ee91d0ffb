package timerwheel

import "testing"

// TestDueWithin checks the count against the timers' due times: overdue
// and loaded timers count, cancels do not, timers beyond the window and in
// the far wheel do not, and released timers stop counting.
func TestDueWithin(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	mustAdd(t, s, T0,
		timerAt(1, T0+100),        // near, in the window
		timerAt(2, T0+59_990),     // last slot of the window
		timerAt(3, T0+30_000),     // in the window
		timerAt(4, T0+61_000),     // after the window
		timerAt(5, T0+3*3600_000), // far wheel
	)
	mustAdd(t, s, T0, Timer{Kind: KindCancel, DeliverMs: T0 + 20_000, CommitLogOffset: 6, QueueOffset: 6, Size: 80,
		KeyHash: KeyHash("TopicA", "other")})
	cases := []struct {
		now, window, want int64
	}{
		{T0, 60_000, 3},
		{T0, 1_000, 1},
		{T0, 62_000, 4},
		{T0, 0, 0},
		{T0 + 3*3600_000, 60_000, 4}, // timer 5 still in the far wheel: not counted (nothing released yet)
	}
	for _, c := range cases {
		if got := s.DueWithin(c.now, c.window); got != c.want {
			t.Errorf("DueWithin(T0+%d, %d) = %d, want %d", c.now-T0, c.window, got, c.want)
		}
	}
	h := newHarness(t, s)
	h.due(T0 + 200) // releases timer 1; loads the slots up to now
	if got := s.DueWithin(T0+200, 60_000); got != 2 {
		t.Errorf("after releasing timer 1: %d, want 2", got)
	}
	h.due(T0 + 30_000)                                   // releases timer 3
	if got := s.DueWithin(T0+30_000, 60_000); got != 2 { // timers 2 and 4
		t.Errorf("after releasing timer 3: %d, want 2", got)
	}
	// A timer linked into a slot already loaded waits in memory: overdue,
	// it counts.
	mustAdd(t, s, T0+30_000, timerAt(7, T0+29_000))
	if got := s.DueWithin(T0+30_000, 60_000); got != 3 {
		t.Errorf("with an overdue timer: %d, want 3", got)
	}
}
