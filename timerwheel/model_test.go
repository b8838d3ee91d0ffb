package timerwheel

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestRandomOperations drives a store with a tiny geometry (1 ms slots,
// 4 s near wheel, 1 s far buckets, 1 min far span, 16-record segments)
// through random interleavings of Add (past, near, far and beyond the far
// span, with replayed batches), Due, pipelined Acks, Rewind, Flush, clock
// jumps and process crashes, against a simple model: nothing is released
// early, every timer is delivered, and a timer is delivered twice only
// when its acknowledgement was not yet flushed at a crash.
func TestRandomOperations(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(itoa(int64(seed)), func(t *testing.T) { runModel(t, seed, modelSteps) })
	}
}

var modelSteps = 2000

func modelOptions(dir string) Options {
	return Options{Dir: dir, SlotMs: 1, NearSlots: 4096, FarSlotMs: 1000, MaxDelay: time.Minute,
		CancelWindow: 100 * time.Millisecond, SegmentSize: 256 * 89, SnapshotEvery: 100,
		CompactBudget: 64, RelinkChunk: 32, AddChunk: 7, NoSync: true}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 1234))
	dir := t.TempDir()
	opts := modelOptions(dir)
	if os.Getenv("DEBUGLOG") != "" {
		opts.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	}
	now := T0
	s, err := Open(opts, now)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	var (
		nextID       int64
		lastBatch    []Timer
		added        = map[int64]int64{}
		delivered    = map[int64]int{}
		ackedUnsaved = map[int64]bool{} // acknowledged since the last Flush
		mayRepeat    = map[int64]int{}  // extra deliveries allowed (crashes)
		inflight     []Batch
	)
	check := func(b Batch, at int64) {
		for _, tm := range b.Timers {
			if tm.DeliverMs > at {
				t.Fatalf("step: timer %d due %d released early at %d", tm.CommitLogOffset, tm.DeliverMs, at)
			}
		}
	}
	ack := func() {
		b := inflight[0]
		inflight = inflight[1:]
		if err := s.Ack(b); err != nil {
			t.Fatal(err)
		}
		for _, tm := range b.Timers {
			delivered[tm.CommitLogOffset]++
			ackedUnsaved[tm.CommitLogOffset] = true
		}
	}
	for step := 0; step < steps; step++ {
		switch p := rng.IntN(100); {
		case p < 30: // enqueue-put
			if lastBatch != nil && rng.IntN(8) == 0 {
				must(t, s.Add(lastBatch, now)) // replay: skipped by queue offset
				break
			}
			batch := make([]Timer, 1+rng.IntN(20))
			for i := range batch {
				nextID++
				var at int64
				switch rng.IntN(4) {
				case 0:
					at = now - rng.Int64N(500)
				case 1:
					at = now + rng.Int64N(3000)
				case 2:
					at = now + 3000 + rng.Int64N(57_000)
				default:
					at = now + 60_000 + rng.Int64N(240_000)
				}
				batch[i] = timerAt(nextID, at)
				added[nextID] = at
			}
			must(t, s.Add(batch, now))
			lastBatch = batch
		case p < 60: // dequeue-get
			b, err := s.Due(now, 1+rng.IntN(50))
			if err != nil {
				t.Fatal(err)
			}
			check(b, now)
			inflight = append(inflight, b)
		case p < 80: // dequeue-put
			if len(inflight) > 0 {
				ack()
			}
		case p < 83:
			must(t, s.Rewind())
			inflight = nil
		case p < 93:
			must(t, s.Flush())
			clear(ackedUnsaved)
		case p < 95: // SIGKILL and restart
			for id := range ackedUnsaved {
				mayRepeat[id]++
			}
			clear(ackedUnsaved)
			inflight = nil
			s, err = Open(opts, now) // the old store is abandoned, not closed
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
		default:
		}
		if rng.IntN(50) == 0 {
			now += 1000 + rng.Int64N(120_000) // idle jump
		} else {
			now += rng.Int64N(30)
		}
	}
	for len(inflight) > 0 {
		ack()
	}
	// Drain: like the actors, flush when Due makes no progress, and let
	// the clock run to the last due time.
	for guard := 0; s.Stats().Pending > 0; guard++ {
		if guard > 1_000_000 {
			t.Fatalf("drain does not finish: %+v", s.Stats())
		}
		b, err := s.Due(now, 500)
		if err != nil {
			t.Fatal(err)
		}
		check(b, now)
		inflight = append(inflight, b)
		ack()
		if b.Len() < 500 {
			must(t, s.Flush())
			if next, ok := s.NextDue(); ok && next > now {
				now = min(next, now+997)
			}
		}
	}
	for id, at := range added {
		switch c := delivered[id]; {
		case c == 0:
			t.Fatalf("timer %d due %d never delivered (now %d base %d R %d ringBase %d issued %v acked %v durable %v; stats %+v)",
				id, at, now, s.base*s.geo.SlotMs, s.relinkedUpTo, s.ringBase*s.geo.SlotMs, s.issued, s.acked, s.durable, s.Stats())
		case c > 1+mayRepeat[id]:
			t.Fatalf("timer %d delivered %d times, %d allowed", id, c, 1+mayRepeat[id])
		}
	}
	if st := s.Stats(); st.Pending != 0 || st.Corrupt != 0 {
		t.Fatalf("after drain: %+v", st)
	}
}
