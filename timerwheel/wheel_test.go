package timerwheel

import (
	"errors"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"defaults", Options{Dir: "x"}, true},
		{"no dir", Options{}, false},
		{"far not multiple of slot", Options{Dir: "x", SlotMs: 7, FarSlotMs: 600_000}, false},
		{"near span too small", Options{Dir: "x", NearSlots: 1024}, false},
		{"far wheel too big", Options{Dir: "x", FarSlotMs: 10, NearSlots: 1 << 10, SlotMs: 1}, false},
		{"negative window", Options{Dir: "x", CancelWindow: -time.Second}, false},
		{"small but valid", Options{Dir: "x", SlotMs: 1, NearSlots: 4096, FarSlotMs: 1000, MaxDelay: time.Hour, CancelWindow: 100 * time.Millisecond}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.ok != (err == nil) {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrOptions) {
				t.Fatalf("error %v does not wrap ErrOptions", err)
			}
		})
	}
}

func TestTimerValidate(t *testing.T) {
	good := timerAt(1, T0)
	tests := []struct {
		name string
		mut  func(*Timer)
		ok   bool
	}{
		{"good", func(*Timer) {}, true},
		{"kind 0", func(t *Timer) { t.Kind = 0 }, false},
		{"negative deliver", func(t *Timer) { t.DeliverMs = -1 }, false},
		{"deliver after year 9999", func(t *Timer) { t.DeliverMs = MaxDeliverMs + 1 }, false},
		{"negative size", func(t *Timer) { t.Size = -1 }, false},
		{"normal without message", func(t *Timer) { t.CommitLogOffset = -1 }, false},
		{"cancel without message", func(t *Timer) { t.Kind = KindCancel; t.CommitLogOffset = -1 }, true},
		{"cancel without key", func(t *Timer) { t.Kind = KindCancel; t.KeyHash = 0 }, false},
		{"bad queue offset", func(t *Timer) { t.QueueOffset = -2 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm := good
			tc.mut(&tm)
			if err := tm.Validate(); tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrInvalidTimer) {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestPlacement(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	g := s.geo
	r0 := s.relinkedUpTo // the first far bucket
	farMs := g.FarSlotMs
	span := (g.FarSlots - 2) * farMs
	tests := []struct {
		name      string
		kind      Kind
		deliver   int64
		far       bool
		slot      int64
		rolled    bool
		effOffset int64 // EffMs - DeliverMs
	}{
		{"already due", KindNormal, T0 - 5000, false, T0 / g.SlotMs, false, 5000},
		{"now", KindNormal, T0, false, T0 / g.SlotMs, false, 0},
		{"in near wheel", KindNormal, T0 + 12_345, false, (T0 + 12_345) / g.SlotMs, false, 0},
		{"last ms before far", KindNormal, r0 - 1, false, (r0 - 1) / g.SlotMs, false, 0},
		{"first ms of far", KindNormal, r0, true, r0 / farMs, false, 0},
		{"a year", KindNormal, T0 + 365*24*3600*1000, true, (T0 + 365*24*3600*1000) / farMs, false, 0},
		{"beyond far span", KindNormal, r0 + span + 5*farMs, true, r0/farMs + g.FarSlots - 2, true, 0},
		{"cancel released early", KindCancel, T0 + 60_000, false, (T0 + 60_000 - 1001) / g.SlotMs, false, -1001},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm := timerAt(int64(i), tc.deliver)
			tm.Kind = tc.kind
			mustAdd(t, s, T0, tm)
			r, err := s.tl.Read(s.tl.Last())
			if err != nil {
				t.Fatal(err)
			}
			if r.Far() != tc.far || r.Slot != tc.slot || (r.Flags&timerlog.FlagRolled != 0) != tc.rolled ||
				r.EffMs-r.DeliverMs != tc.effOffset {
				t.Fatalf("record far=%v slot=%d flags=%#x eff-deliver=%d; want far=%v slot=%d rolled=%v eff-deliver=%d",
					r.Far(), r.Slot, r.Flags, r.EffMs-r.DeliverMs, tc.far, tc.slot, tc.rolled, tc.effOffset)
			}
		})
	}
}

// TestNeverEarlyProperty adds random timers, many of them on slot and
// bucket boundaries and their neighbours, calls Due at random times, and
// checks that no timer is released before its DeliverMs, that each is
// released exactly once, and that calling Due at a timer's exact
// millisecond releases it then.
func TestNeverEarlyProperty(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(itoa(int64(seed)), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			s := openStore(t, testOptions(t.TempDir()), T0)
			h := newHarness(t, s)
			const n = 4000
			want := map[int64]int64{}
			exact := map[int64]bool{} // due times Due is called at exactly
			now := T0
			var id int64
			for id < n {
				var at int64
				switch rng.IntN(5) {
				case 0: // on a slot boundary, or next to one
					at = (now/10+int64(rng.IntN(3000)))*10 + int64(rng.IntN(3)) - 1
				case 1: // around a far bucket boundary
					at = (now/600_000+int64(rng.IntN(3)))*600_000 + int64(rng.IntN(5)) - 2
				case 2: // already due
					at = now - int64(rng.IntN(10_000))
				default:
					at = now + int64(rng.IntN(2_000_000))
				}
				id++
				want[id] = at
				if rng.IntN(10) == 0 {
					exact[at] = true
				}
				mustAdd(t, s, now, timerAt(id, at))
				if rng.IntN(50) == 0 { // interleave dequeue with enqueue
					now += int64(rng.IntN(40))
					h.due(now)
				}
			}
			// Walk the clock: random steps, plus every exact time.
			var stops []int64
			for at := range exact {
				stops = append(stops, at)
			}
			for at := now; at < T0+2_700_000; at += int64(1 + rng.IntN(700)) {
				stops = append(stops, at)
			}
			sort.Slice(stops, func(i, j int) bool { return stops[i] < stops[j] })
			for _, at := range stops {
				if at >= now {
					now = at
					h.due(now)
				}
			}
			got := h.delivered()
			for id, at := range want {
				if got[id] != 1 {
					t.Fatalf("timer %d (due %d) released %d times", id, at, got[id])
				}
			}
			for _, r := range h.out {
				if h.called[r.DeliverMs] && r.DeliverMs > r.AddedMs && r.at != r.DeliverMs {
					t.Fatalf("timer %d due %d released at %d although Due ran at its ms", r.CommitLogOffset, r.DeliverMs, r.at)
				}
			}
			if st := s.Stats(); st.Pending != 0 || st.Loaded != 0 {
				t.Fatalf("after drain: %+v", st)
			}
		})
	}
}

// TestMillisecondPrecision calls Due every millisecond: every timer comes
// out exactly at its DeliverMs, including the last and first ms of slots.
func TestMillisecondPrecision(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	h := newHarness(t, s)
	var id int64
	for at := T0 + 1; at < T0+400; at += 3 {
		id++
		mustAdd(t, s, T0, timerAt(id, at))
	}
	for now := T0; now < T0+500; now++ {
		h.due(now)
	}
	if len(h.out) != int(id) {
		t.Fatalf("released %d of %d", len(h.out), id)
	}
	for _, r := range h.out {
		if r.at != r.DeliverMs {
			t.Fatalf("timer due %d released at %d", r.DeliverMs, r.at)
		}
	}
}

// TestFarRelinkNoLoss spreads timers over a year: each goes through the
// far wheel, is relinked into the near wheel one bucket ahead and comes out
// at its time, in order.
func TestFarRelinkNoLoss(t *testing.T) {
	opts := testOptions(t.TempDir())
	s := openStore(t, opts, T0)
	h := newHarness(t, s)
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 3000
	year := int64(365 * 24 * 3600 * 1000)
	var batch []Timer
	for id := int64(1); id <= n; id++ {
		at := T0 + rng.Int64N(year)
		if id%100 == 0 {
			at = T0 + year - 1 // the far end
		}
		batch = append(batch, timerAt(id, at))
	}
	mustAdd(t, s, T0, batch...)
	h.run(T0, T0+year+1000)
	got := h.delivered()
	if len(got) != n {
		t.Fatalf("delivered %d of %d", len(got), n)
	}
	for id, c := range got {
		if c != 1 {
			t.Fatalf("timer %d delivered %d times", id, c)
		}
	}
	for i := 1; i < len(h.out); i++ {
		if h.out[i].DeliverMs < h.out[i-1].DeliverMs {
			t.Fatalf("out of order: %d after %d", h.out[i].DeliverMs, h.out[i-1].DeliverMs)
		}
	}
	st := s.Stats()
	if st.Relinked < n-100 {
		t.Fatalf("relinked %d, want about %d", st.Relinked, n)
	}
	t.Logf("stats after a year: %+v", st)
}

func TestAddSkipsReplayedQueueOffsets(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	batch := []Timer{timerAt(1, T0+10), timerAt(2, T0+20), timerAt(3, T0+30)}
	mustAdd(t, s, T0, batch...)
	mustAdd(t, s, T0, batch[1:]...)                         // replay
	mustAdd(t, s, T0, timerAt(3, T0+30), timerAt(4, T0+40)) // overlap
	noQueue := timerAt(5, T0+50)
	noQueue.QueueOffset = -1
	mustAdd(t, s, T0, noQueue, noQueue) // not from the queue: never skipped
	if st := s.Stats(); st.Added != 6 || st.DuplicateAdds != 3 {
		t.Fatalf("added %d, duplicates %d", st.Added, st.DuplicateAdds)
	}
	if c := s.Checkpoint(); c.EnqueueQueueOffset != 4 {
		t.Fatalf("enqueue offset %d", c.EnqueueQueueOffset)
	}
	bad := timerAt(9, T0)
	bad.Kind = 7
	if err := s.Add([]Timer{timerAt(10, T0), bad}, T0); !errors.Is(err, ErrInvalidTimer) {
		t.Fatalf("invalid timer: %v", err)
	}
	if st := s.Stats(); st.Added != 6 {
		t.Fatalf("invalid batch wrote %d timers", st.Added-6)
	}
}

func TestAckOrderAndRewind(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	for id := int64(1); id <= 10; id++ {
		mustAdd(t, s, T0, timerAt(id, T0+id))
	}
	b1, _ := s.Due(T0+10, 4)
	b2, _ := s.Due(T0+10, 4) // pipelined
	if len(b1.Timers) != 4 || len(b2.Timers) != 4 || b2.From != b1.To {
		t.Fatalf("batches %v..%v (%d), %v..%v (%d)", b1.From, b1.To, len(b1.Timers), b2.From, b2.To, len(b2.Timers))
	}
	if err := s.Ack(b2); !errors.Is(err, ErrAckOrder) {
		t.Fatalf("ack out of order: %v", err)
	}
	if err := s.Ack(b1); err != nil {
		t.Fatal(err)
	}
	// The stage holding b2 restarts: b2 is released again, same cursors.
	if err := s.Rewind(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(b2); !errors.Is(err, ErrAckOrder) {
		t.Fatalf("ack of a rewound batch: %v", err)
	}
	b3, _ := s.Due(T0+10, 100)
	if len(b3.Timers) != 6 || b3.Timers[0].Cursor() != b2.Timers[0].Cursor() {
		t.Fatalf("after rewind: %d timers from %v, want 6 from %v", len(b3.Timers), b3.Timers[0].Cursor(), b2.Timers[0].Cursor())
	}
	if err := s.Ack(b3); err != nil {
		t.Fatal(err)
	}
}

func TestNextDue(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	if _, ok := s.NextDue(); ok {
		t.Fatal("empty store has a next due time")
	}
	mustAdd(t, s, T0, timerAt(1, T0+1234))
	if at, ok := s.NextDue(); !ok || at > T0+1234 || at < T0+1230 {
		t.Fatalf("NextDue = %d, %v", at-T0, ok)
	}
	b, _ := s.Due(T0+1230, 10)
	_ = s.Ack(b)
	if at, _ := s.NextDue(); at != T0+1234 { // slot loaded: exact time
		t.Fatalf("NextDue after load = %d", at-T0)
	}
	far := T0 + 30*24*3600*1000
	b, _ = s.Due(T0+1234, 10)
	_ = s.Ack(b)
	mustAdd(t, s, T0+1234, timerAt(2, far))
	at, ok := s.NextDue()
	if !ok || at > far || at < far-2*s.geo.FarSlotMs {
		t.Fatalf("NextDue for far timer = %d (timer %d)", at, far)
	}
}

func TestNoClockInsideTheStore(t *testing.T) {
	// The store must take time from its callers only (deterministic
	// tests): no wall clock in non-test code.
	files, err := filepathGlobAll(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if containsAny(f, "time.Now(", "time.Since(", "time.Sleep(", "time.After(") {
			t.Errorf("%s reads the clock", f)
		}
	}
}
