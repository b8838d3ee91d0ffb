package timerwheel

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/wheelmq/wheelmq/timerwheel/timerlog"
)

// workload adds n timers with ids from next, due between from and
// from+spread (a tenth of them in the far wheel), in batches.
func workload(t *testing.T, s *Store, rng *rand.Rand, next *int64, n int, now, spread int64) map[int64]int64 {
	t.Helper()
	added := map[int64]int64{}
	var batch []Timer
	for i := 0; i < n; i++ {
		*next++
		at := now + rng.Int64N(spread)
		if rng.IntN(10) == 0 {
			at = now + 3_600_000 + rng.Int64N(48*3_600_000)
		}
		added[*next] = at
		batch = append(batch, timerAt(*next, at))
		if len(batch) == 64 {
			mustAdd(t, s, now, batch...)
			batch = batch[:0]
		}
	}
	mustAdd(t, s, now, batch...)
	return added
}

func TestReopenResumes(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.SnapshotEvery = 300
	rng := rand.New(rand.NewPCG(3, 3))
	var next int64
	s, err := Open(opts, T0)
	if err != nil {
		t.Fatal(err)
	}
	added := workload(t, s, rng, &next, 2000, T0, 600_000)
	h := newHarness(t, s)
	h.run(T0, T0+300_000)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, opts, T0+300_000)
	if c := s2.Checkpoint(); c.EnqueueQueueOffset != next {
		t.Fatalf("enqueue offset after reopen %d, want %d", c.EnqueueQueueOffset, next)
	}
	if st := s2.Stats(); st.Replayed >= 600 {
		t.Fatalf("replayed %d records with a snapshot every 300", st.Replayed)
	}
	h.s = s2
	h.run(T0+300_000, T0+60*3_600_000)
	got := h.delivered()
	for id := range added {
		if got[id] != 1 {
			t.Fatalf("timer %d delivered %d times", id, got[id])
		}
	}
}

// TestProcessCrash abandons the store without Flush or Close (SIGKILL: the
// page cache keeps what was written). Every timer added survives; timers
// acknowledged before the last Flush are not released again; the replays
// are exactly the timers acknowledged after it.
func TestProcessCrash(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(itoa(int64(seed)), func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions(dir)
			opts.SnapshotEvery = 500
			rng := rand.New(rand.NewPCG(seed, 11))
			var next int64
			s, err := Open(opts, T0)
			if err != nil {
				t.Fatal(err)
			}
			added := workload(t, s, rng, &next, 1500, T0, 400_000)
			h := newHarness(t, s)
			h.run(T0, T0+100_000)
			must(t, s.Flush())
			flushedAt := len(h.out)
			h.flushEvery = 1 << 30 // no more flushes
			for k, v := range workload(t, s, rng, &next, 500, T0+100_000, 400_000) {
				added[k] = v
			}
			h.run(T0+100_000, T0+200_000)
			// crash
			s2 := openStore(t, opts, T0+200_000)
			h2 := newHarness(t, s2)
			h2.run(T0+200_000, T0+60*3_600_000)
			first := map[int64]bool{}
			for _, r := range h.out[:flushedAt] {
				first[r.CommitLogOffset] = true
			}
			replayable := map[int64]bool{}
			for _, r := range h.out[flushedAt:] {
				replayable[r.CommitLogOffset] = true
			}
			again := 0
			for _, r := range h2.out {
				if first[r.CommitLogOffset] {
					t.Fatalf("timer %d acknowledged and flushed before the crash released again", r.CommitLogOffset)
				}
				if replayable[r.CommitLogOffset] {
					again++
				}
			}
			if again != len(replayable) {
				t.Fatalf("replayed %d of the %d timers acknowledged after the last flush", again, len(replayable))
			}
			all := h.delivered()
			for id, c := range h2.delivered() {
				all[id] += c
			}
			for id := range added {
				if all[id] == 0 {
					t.Fatalf("timer %d lost", id)
				}
			}
		})
	}
}

// crashImage builds a power-loss image of dir: durable is a copy taken
// right after a Flush; of what the TimerLog gained since, only the first
// keep bytes (in file order) made it to disk, optionally followed by junk.
func crashImage(t *testing.T, durable, live, dst string, keep int64, junk []byte) {
	t.Helper()
	copyDir(t, durable, dst)
	logLive, logDst := filepath.Join(live, logDirName), filepath.Join(dst, logDirName)
	names, err := os.ReadDir(logLive)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Name() < names[j].Name() })
	for _, e := range names {
		if len(e.Name()) != 20 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(logLive, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var have int64
		if fi, err := os.Stat(filepath.Join(logDst, e.Name())); err == nil {
			have = fi.Size()
		}
		extra := data[min(have, int64(len(data))):]
		n := min(keep, int64(len(extra)))
		keep -= n
		if n == 0 && have == 0 && junk == nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(logDst, e.Name()), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(extra[:n])
		if keep == 0 && junk != nil {
			_, _ = f.Write(junk)
			junk = nil
		}
		_ = f.Close()
	}
}

// TestPowerLoss opens crash images with torn TimerLog tails: everything
// added before the durable Flush is delivered, nothing acknowledged before
// it is released again, nothing is early.
func TestPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int64 // bytes of the unflushed tail that reached the disk; -1 all
		junk []byte
	}{
		{"nothing after flush", 0, nil},
		{"half an entry", timerlog.EntrySize / 2, nil},
		{"some entries and a partial", 7*timerlog.EntrySize + 33, nil},
		{"zeros after entries", 20 * timerlog.EntrySize, make([]byte, 300)},
		{"everything", -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := t.TempDir()
			opts := testOptions(live)
			opts.SnapshotEvery = 400
			rng := rand.New(rand.NewPCG(5, 5))
			var next int64
			s, err := Open(opts, T0)
			if err != nil {
				t.Fatal(err)
			}
			added := workload(t, s, rng, &next, 1200, T0, 300_000)
			h := newHarness(t, s)
			h.run(T0, T0+100_000)
			must(t, s.Flush())
			durable := t.TempDir()
			copyDir(t, live, durable)
			ackedDurable := map[int64]bool{}
			for _, r := range h.out {
				ackedDurable[r.CommitLogOffset] = true
			}
			h.flushEvery = 1 << 30
			workload(t, s, rng, &next, 800, T0+100_000, 300_000)
			h.run(T0+100_000, T0+150_000)
			keep := tc.keep
			if keep < 0 {
				keep = 1 << 40
			}
			img := t.TempDir()
			crashImage(t, durable, live, img, keep, tc.junk)
			s2 := openStore(t, testOptions(img), T0+150_000)
			h2 := newHarness(t, s2)
			h2.run(T0+150_000, T0+60*3_600_000)
			got := h2.delivered()
			for id := range added {
				if ackedDurable[id] {
					if got[id] != 0 {
						t.Fatalf("timer %d acknowledged before the flush released again", id)
					}
				} else if got[id] != 1 {
					t.Fatalf("timer %d (added before the flush) delivered %d times after power loss", id, got[id])
				}
			}
		})
	}
}

// TestBitFlipDetected flips a bit in a durable TimerLog record: the record
// is detected as corrupt (counted, logged), the store keeps working and the
// other timers are delivered.
func TestBitFlipDetected(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	s, err := Open(opts, T0)
	if err != nil {
		t.Fatal(err)
	}
	// One timer per slot so that a broken record costs only itself.
	for id := int64(1); id <= 300; id++ {
		mustAdd(t, s, T0, timerAt(id, T0+1000+id*10))
	}
	must(t, s.Close())
	// Flip a bit of timer 150's record (seq 150) in the first segment.
	seg := filepath.Join(dir, logDirName, "00000000000000000001")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[149*timerlog.EntrySize+50] ^= 0x20
	if err := os.WriteFile(seg, data, 0o640); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, opts, T0)
	h := newHarness(t, s2)
	h.run(T0, T0+10_000)
	got := h.delivered()
	if got[150] != 0 || len(got) != 299 {
		t.Fatalf("delivered %d timers (timer 150: %d), want the 299 intact ones", len(got), got[150])
	}
	if st := s2.Stats(); st.Corrupt == 0 {
		t.Fatalf("corruption not counted: %+v", st)
	}
}

func TestCorruptSnapshotFallsBackToReplay(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.SnapshotEvery = 50
	s, err := Open(opts, T0)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 500; id++ {
		mustAdd(t, s, T0, timerAt(id, T0+1000+id*37))
	}
	must(t, s.Close())
	snap := filepath.Join(dir, snapshotName)
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	must(t, os.WriteFile(snap, b, 0o640))
	s2 := openStore(t, opts, T0)
	if st := s2.Stats(); st.Replayed != 500 || st.Pending != 500 {
		t.Fatalf("after corrupt snapshot: %+v", st)
	}
	h := newHarness(t, s2)
	h.run(T0, T0+100_000)
	if len(h.delivered()) != 500 {
		t.Fatalf("delivered %d", len(h.delivered()))
	}
}

func TestIncompatibleGeometry(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(testOptions(dir), T0)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, T0, timerAt(1, T0+5))
	must(t, s.Close())
	opts := testOptions(dir)
	opts.SlotMs = 20
	if _, err := Open(opts, T0); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("open with other SlotMs: %v", err)
	}
}

// TestLogStaysBounded runs long-delay timers among a stream of short ones
// with tiny segments: relinking, compaction (far buckets moved forward) and
// truncation keep the TimerLog near its live size, across a reopen, and
// every timer is delivered once.
func TestLogStaysBounded(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.SegmentSize = 16 * timerlog.EntrySize
	opts.SnapshotEvery = 64
	opts.CompactBudget = 256
	s, err := Open(opts, T0)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s)
	h.flushEvery = 1
	want := map[int64]bool{}
	var id int64
	maxSegs := 0
	now := T0
	for step := 0; step < 400; step++ {
		var batch []Timer
		for k := 0; k < 20; k++ {
			id++
			at := now + 500 + int64(k)*50 // short
			if k == 0 {
				at = now + 48*3_600_000 + int64(step)*1000 // long: pins old segments
			}
			batch = append(batch, timerAt(id, at))
			want[id] = true
		}
		mustAdd(t, s, now, batch...)
		now += 2000
		h.run(now-2000, now)
		if step == 200 {
			must(t, s.Close())
			s = openStore(t, opts, now)
			h.s = s
		}
		st := s.Stats()
		maxSegs = max(maxSegs, st.LogSegments)
	}
	st := s.Stats()
	h.run(now, now+60*3_600_000)
	got := h.delivered()
	for id := range want {
		if got[id] != 1 {
			t.Fatalf("timer %d delivered %d times", id, got[id])
		}
	}
	// 400 long timers pending at most: 400 live records = 25 segments; the
	// log may hold about twice that plus slack.
	if maxSegs > 80 || st.Moved == 0 || st.Truncated == 0 {
		t.Fatalf("max segments %d, stats %+v", maxSegs, st)
	}
	t.Logf("max segments %d, final stats %+v", maxSegs, s.Stats())
}

func TestMinCommitLogOffset(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	if _, ok := s.MinCommitLogOffset(); ok {
		t.Fatal("empty store pins the CommitLog")
	}
	mustAdd(t, s, T0, timerAt(500, T0+10), timerAt(700, T0+20))
	if off, ok := s.MinCommitLogOffset(); !ok || off != 500 {
		t.Fatalf("min offset %d %v", off, ok)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCrashAfterIdleSkip: an idle stretch lets the dequeue side run far
// ahead of the checkpointed ack position (empty retained slots are
// skipped), so a relinked record lands more than a ring lap beyond it. A
// crash before the next Flush must still recover a consistent wheel: the
// relinked timer is delivered, a timer added afterwards whose slot shares
// its ring index does not collide, and nothing is early.
func TestCrashAfterIdleSkip(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	s, err := Open(opts, T0)
	if err != nil {
		t.Fatal(err)
	}
	g := s.geo
	h := newHarness(t, s)
	mustAdd(t, s, T0, timerAt(1, T0+100))
	h.run(T0, T0+200)
	must(t, s.Flush())
	must(t, s.Flush())
	far := T0 + 3*3_600_000
	mustAdd(t, s, T0+200, timerAt(2, far))
	// Due well ahead: the first call stops at the retained slot of timer
	// 1; once that is checkpointed away, the next runs over the empty
	// stretch and relinks timer 2 into the near wheel. No Flush after it.
	for i := 0; i < 2; i++ {
		b, err := s.Due(far-5*60_000, 100)
		if err != nil || b.Len() != 0 {
			t.Fatal(err, b.Len())
		}
		must(t, s.Ack(b))
		if i == 0 {
			must(t, s.Flush())
			must(t, s.Flush())
		}
	}
	if c := s.Checkpoint(); (far-c.DurableAcked.Ms)/g.SlotMs < g.NearSlots {
		t.Fatalf("durable ack %d not a lap behind %d", c.DurableAcked.Ms, far)
	}
	if st := s.Stats(); st.Relinked != 1 {
		t.Fatalf("relinked %d", st.Relinked)
	}
	// crash
	s2 := openStore(t, opts, far-5*60_000)
	// Same ring index as timer 2's slot, one lap earlier.
	lapEarlier := far - int64(g.NearSlots)*g.SlotMs
	mustAdd(t, s2, far-5*60_000, timerAt(3, lapEarlier), timerAt(4, far+1))
	h2 := newHarness(t, s2)
	h2.run(far-5*60_000, far+10_000)
	got := h2.delivered()
	if got[2] != 1 || got[3] != 1 || got[4] != 1 || got[1] != 0 {
		t.Fatalf("delivered %v", got)
	}
}

// TestRewindAfterIdleSkip: Due ran over an empty stretch (the retained
// window moved past the acknowledged position) and its batch was never
// acknowledged; after Rewind, timers added just after the acknowledged
// position must still fit the window and come out, none early.
func TestRewindAfterIdleSkip(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()), T0)
	g := s.geo
	far := T0 + 3*3_600_000
	mustAdd(t, s, T0, timerAt(1, far))
	b, err := s.Due(far-5*60_000, 100) // not acknowledged
	if err != nil || b.Len() != 0 || s.Stats().Relinked != 1 {
		t.Fatal(err, b.Len(), s.Stats().Relinked)
	}
	must(t, s.Rewind())
	lapEarlier := far - int64(g.NearSlots)*g.SlotMs
	mustAdd(t, s, T0+10, timerAt(2, lapEarlier), timerAt(3, T0+20))
	h := newHarness(t, s)
	h.run(far-5*60_000, far+10)
	if got := h.delivered(); len(got) != 3 {
		t.Fatalf("delivered %v", got)
	}
}
