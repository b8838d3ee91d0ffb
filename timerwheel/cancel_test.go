package timerwheel

import "testing"

// cancelOf cancels timer target (ids are CommitLog offsets). Cancel tests
// add in arbitrary id order, so their timers carry no queue offset.
func cancelOf(id, target int64, at int64) Timer {
	return Timer{Kind: KindCancel, DeliverMs: at, CommitLogOffset: id, QueueOffset: -1, Size: 80,
		KeyHash: KeyHash("TopicA", keyOf(target))}
}

func timerNQ(id, at int64) Timer {
	t := timerAt(id, at)
	t.QueueOffset = -1
	return t
}

func TestCancel(t *testing.T) {
	const d = T0 + 50_000 // target delivery time
	tests := []struct {
		name string
		// steps run in order; each adds timers at a time and may dequeue first
		run       func(t *testing.T, s *Store, h *harness)
		cancelled bool // target 1 suppressed
	}{
		{name: "same ms, cancel added after target", cancelled: true, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, timerNQ(1, d))
			mustAdd(t, s, T0+10, cancelOf(100, 1, d))
		}},
		{name: "cancel added before target", cancelled: true, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, cancelOf(100, 1, d))
			mustAdd(t, s, T0+10, timerNQ(1, d))
		}},
		{name: "different slot, cancel later", cancelled: true, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, timerNQ(1, d-5))
			mustAdd(t, s, T0, cancelOf(100, 1, d+995)) // 100 slots further
		}},
		{name: "different slot, cancel earlier", cancelled: true, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, timerNQ(1, d+999))
			mustAdd(t, s, T0, cancelOf(100, 1, d))
		}},
		{name: "RocketMQ rounding: TIMER_OUT_MS+1 of a 1s precision", cancelled: true, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, timerNQ(1, d+737))
			mustAdd(t, s, T0, cancelOf(100, 1, d+1)) // floor(d+737, 1000)+1
		}},
		{name: "outside the window", cancelled: false, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, timerNQ(1, d))
			mustAdd(t, s, T0, cancelOf(100, 1, d+1500))
		}},
		{name: "both in the far wheel", cancelled: true, run: func(t *testing.T, s *Store, h *harness) {
			far := T0 + 3*3600*1000
			mustAdd(t, s, T0, timerNQ(1, far))
			mustAdd(t, s, T0+100, cancelOf(100, 1, far+400))
		}},
		{name: "target far, cancel arrives when it is near", cancelled: true, run: func(t *testing.T, s *Store, h *harness) {
			far := T0 + 3*3600*1000
			mustAdd(t, s, T0, timerNQ(1, far))
			h.run(T0, far-60_000)
			mustAdd(t, s, far-60_000, cancelOf(100, 1, far))
		}},
		{name: "cancel of an already delivered timer is a no-op", cancelled: false, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, timerNQ(1, T0+100))
			h.run(T0, T0+200)
			mustAdd(t, s, T0+200, cancelOf(100, 1, T0+300))
		}},
		{name: "cancel of an unknown key is a no-op", cancelled: false, run: func(t *testing.T, s *Store, h *harness) {
			mustAdd(t, s, T0, timerNQ(1, d))
			mustAdd(t, s, T0, cancelOf(100, 999, d))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, testOptions(t.TempDir()), T0)
			h := newHarness(t, s)
			// Bystanders with other keys around the same time are never hit.
			mustAdd(t, s, T0, timerNQ(2, d), timerNQ(3, d+500), timerNQ(4, d-500))
			tc.run(t, s, h)
			h.run(T0, T0+4*3600*1000)
			got := h.delivered()
			for _, id := range []int64{2, 3, 4} {
				if got[id] != 1 {
					t.Fatalf("bystander %d delivered %d times", id, got[id])
				}
			}
			if (got[1] == 0) != tc.cancelled {
				t.Fatalf("target delivered %d times, want cancelled=%v", got[1], tc.cancelled)
			}
			var inCancelled int
			for _, r := range h.out {
				if r.cancelled && r.CommitLogOffset == 1 {
					inCancelled++
				}
			}
			if tc.cancelled && inCancelled != 1 {
				t.Fatalf("target in Batch.Cancelled %d times", inCancelled)
			}
			if st := s.Stats(); st.Tombstones != 0 || st.Pending != 0 || st.PendingCancels != 0 {
				t.Fatalf("leftovers after drain: %+v", st)
			}
		})
	}
}

// TestCancelSurvivesRestart: a cancel released (and acknowledged) before a
// crash still suppresses its target after recovery, because recovery
// reloads the slots of the cancel window behind the acknowledged position.
func TestCancelSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	const d = T0 + 50_000
	s, err := Open(testOptions(dir), T0)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, T0, timerNQ(1, d+900), cancelOf(100, 1, d))
	h := newHarness(t, s)
	h.run(T0, d) // the cancel is released at d-1001 and acked; target not yet due
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Tombstones != 1 {
		t.Fatalf("tombstones before crash: %d", st.Tombstones)
	}
	// crash: abandon s without Close
	s2 := openStore(t, testOptions(dir), d)
	if st := s2.Stats(); st.Tombstones != 1 {
		t.Fatalf("tombstones after recovery: %+v", st)
	}
	h2 := newHarness(t, s2)
	h2.run(d, d+5000)
	if got := h2.delivered(); got[1] != 0 {
		t.Fatalf("cancelled timer delivered after restart")
	}
}
