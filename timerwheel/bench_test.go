package timerwheel

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Benchmarks measure the store alone, on real files with fsync (Flush as a
// flusher actor would call it). The wall clock appears only here, to time
// the work and, in BenchmarkBurst500k, to drive the store's clock in real
// time. Run with -benchtime=1x; figures and how they were taken are in
// docs/timer.md. NOSYNC=1 makes BenchmarkBurst500k skip fsync (to tell disk
// from CPU effects).

// BenchmarkAddDue adds 1M timers due over 10 s in batches of 1000 (Flush
// every 100 batches), then drains them all with Due(max 10000) and Ack.
func BenchmarkAddDue(b *testing.B) {
	const n, batch = 1_000_000, 1000
	var addDur, dueDur time.Duration
	for i := 0; i < b.N; i++ {
		s, err := Open(Options{Dir: b.TempDir()}, T0)
		if err != nil {
			b.Fatal(err)
		}
		timers := make([]Timer, batch)
		start := time.Now()
		for k := 0; k < n/batch; k++ {
			for j := range timers {
				id := int64(k*batch + j + 1)
				timers[j] = timerAt(id, T0+id%10_000)
			}
			if err := s.Add(timers, T0); err != nil {
				b.Fatal(err)
			}
			if k%100 == 99 {
				must(b, s.Flush())
			}
		}
		must(b, s.Flush())
		addDur += time.Since(start)
		start = time.Now()
		got := 0
		for k := 0; got < n; k++ {
			bt, err := s.Due(T0+10_000, 10_000)
			if err != nil {
				b.Fatal(err)
			}
			got += len(bt.Timers)
			must(b, s.Ack(bt))
			if k%10 == 9 {
				must(b, s.Flush())
			}
		}
		must(b, s.Flush())
		dueDur += time.Since(start)
		must(b, s.Close())
	}
	b.ReportMetric(float64(n*b.N)/addDur.Seconds(), "add/s")
	b.ReportMetric(float64(n*b.N)/dueDur.Seconds(), "due/s")
	b.ReportMetric(float64(n*b.N*2)/(addDur+dueDur).Seconds(), "ops/s")
}

// BenchmarkBurst500k: 500k timers all due within the same second. They are
// added two hours ahead, so they sit in a far bucket and are relinked ten
// minutes before (timed separately). Then the store's clock follows the
// wall clock from the start of that second, and a dequeue loop (Due 10000,
// Ack, Flush every 10 batches) runs until all are out. Reported: time from
// the start of the second to the last release, lateness p50/p99/max. A
// goroutine flushes every 10 ms meanwhile.
func BenchmarkBurst500k(b *testing.B) {
	const n = 500_000
	for i := 0; i < b.N; i++ {
		s, err := Open(Options{Dir: b.TempDir(), NoSync: os.Getenv("NOSYNC") != ""}, T0)
		if err != nil {
			b.Fatal(err)
		}
		due := T0 + 2*3_600_000 + 5*60_000 // mid-bucket
		timers := make([]Timer, 0, 10_000)
		for id := int64(1); id <= n; id++ {
			timers = append(timers, timerAt(id, due+id%1000))
			if len(timers) == cap(timers) {
				must(b, s.Add(timers, T0))
				timers = timers[:0]
			}
		}
		must(b, s.Flush())
		stop := startFlusher(b, s)
		// Relink, one far bucket ahead, RelinkChunk records per Due call.
		start := time.Now()
		var maxCall time.Duration
		for s.Stats().Relinked < n {
			t0 := time.Now()
			bt, err := s.Due(due-s.geo.FarSlotMs, 10_000)
			maxCall = max(maxCall, time.Since(t0))
			if err != nil || bt.Len() != 0 {
				b.Fatal(err, bt.Len())
			}
			must(b, s.Ack(bt))
		}
		relink := time.Since(start)
		// Real time from the start of the due second.
		lateness := make([]int64, 0, n)
		wall0 := time.Now()
		clock := func() int64 { return due + time.Since(wall0).Milliseconds() }
		var maxDue time.Duration
		for len(lateness) < n {
			now := clock()
			t0 := time.Now()
			bt, err := s.Due(now, 10_000)
			maxDue = max(maxDue, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			for _, t := range bt.Timers {
				if t.DeliverMs > now {
					b.Fatalf("early: %d > %d", t.DeliverMs, now)
				}
				lateness = append(lateness, now-t.DeliverMs)
			}
			must(b, s.Ack(bt))
		}
		total := time.Since(wall0)
		stop()
		slices.Sort(lateness)
		b.ReportMetric(float64(relink.Milliseconds()), "relink-ms")
		b.ReportMetric(float64(maxCall.Microseconds())/1000, "max-relink-call-ms")
		b.ReportMetric(float64(maxDue.Microseconds())/1000, "max-due-call-ms")
		b.ReportMetric(float64(total.Milliseconds()), "all-out-ms")
		b.ReportMetric(float64(lateness[n/2]), "p50-late-ms")
		b.ReportMetric(float64(lateness[n*99/100]), "p99-late-ms")
		b.ReportMetric(float64(lateness[n-1]), "max-late-ms")
		must(b, s.Close())
	}
}

// BenchmarkBurstNear500k adds 500k timers due in one second 30 s ahead
// (near wheel) in a random order of due times, as a burst sent by many
// clients arrives, so that the slots' chains interleave across the whole
// TimerLog; then it drains them with everything due (a dequeue side that
// is behind) in batches of 4096, as dequeue_get does, and reports the time
// of the drain and of the longest Due call.
func BenchmarkBurstNear500k(b *testing.B) {
	const n = 500_000
	for i := 0; i < b.N; i++ {
		s, err := Open(Options{Dir: b.TempDir(), NoSync: os.Getenv("NOSYNC") != ""}, T0)
		if err != nil {
			b.Fatal(err)
		}
		due := T0 + 30_000
		timers := make([]Timer, 0, 4096)
		for id := int64(1); id <= n; id++ {
			timers = append(timers, timerAt(id, due+(id*7919)%1000))
			if len(timers) == cap(timers) {
				must(b, s.Add(timers, T0))
				timers = timers[:0]
			}
		}
		must(b, s.Add(timers, T0))
		must(b, s.Flush())
		stop := startFlusher(b, s)
		start := time.Now()
		var maxDue time.Duration
		got := 0
		for got < n {
			t0 := time.Now()
			bt, err := s.Due(due+999, 4096)
			maxDue = max(maxDue, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			got += bt.Len()
			must(b, s.Ack(bt))
		}
		drain := time.Since(start)
		stop()
		b.ReportMetric(float64(drain.Milliseconds()), "drain-ms")
		b.ReportMetric(float64(maxDue.Microseconds())/1000, "max-due-call-ms")
		must(b, s.Close())
	}
}

// BenchmarkPendingMemory adds WHEELMQ_BENCH_PENDING timers (default 1M)
// spread over 365 days and reports the heap and RSS with all of them
// pending, the disk bytes per timer and the time to reopen: with the
// snapshot (the normal case) and without it (every record replayed).
func BenchmarkPendingMemory(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("WHEELMQ_BENCH_PENDING")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		runtime.GC()
		debug.FreeOSMemory()
		heap0, rss0 := memNow()
		s, err := Open(Options{Dir: dir}, T0)
		if err != nil {
			b.Fatal(err)
		}
		year := int64(365 * 24 * 3_600_000)
		timers := make([]Timer, 0, 10_000)
		start := time.Now()
		for id := int64(1); id <= int64(n); id++ {
			timers = append(timers, timerAt(id, T0+60_000+(id*7919)%year))
			if len(timers) == cap(timers) {
				must(b, s.Add(timers, T0))
				timers = timers[:0]
				if id%1_000_000 == 0 {
					must(b, s.Flush())
				}
			}
		}
		must(b, s.Add(timers, T0))
		must(b, s.Flush())
		add := time.Since(start)
		timers = nil
		runtime.GC()
		debug.FreeOSMemory()
		heap1, rss1 := memNow()
		if st := s.Stats(); st.Pending != int64(n) {
			b.Fatalf("pending %d", st.Pending)
		}
		must(b, s.Close())
		disk := dirBytes(dir)
		start = time.Now()
		s, err = Open(Options{Dir: dir}, T0)
		if err != nil {
			b.Fatal(err)
		}
		reopen := time.Since(start)
		runtime.GC()
		debug.FreeOSMemory()
		heap2, _ := memNow()
		if st := s.Stats(); st.Pending != int64(n) {
			b.Fatalf("pending after reopen %d", st.Pending)
		}
		must(b, s.Close())
		// Worst case: no usable snapshot, every record replayed.
		if err := os.Remove(filepath.Join(dir, snapshotName)); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
		start = time.Now()
		s, err = Open(Options{Dir: dir}, T0)
		if err != nil {
			b.Fatal(err)
		}
		replay := time.Since(start)
		if st := s.Stats(); st.Pending != int64(n) {
			b.Fatalf("pending after full replay %d", st.Pending)
		}
		must(b, s.Close())
		b.ReportMetric(float64(n)/add.Seconds(), "add/s")
		b.ReportMetric(float64(heap1-heap0)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(rss1-rss0)/(1<<20), "rss-delta-MiB")
		b.ReportMetric(float64(rss1)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(disk)/float64(n), "disk-B/timer")
		b.ReportMetric(float64(reopen.Milliseconds()), "reopen-ms")
		b.ReportMetric(float64(replay.Milliseconds()), "reopen-full-replay-ms")
		b.ReportMetric(float64(heap2-heap0)/(1<<20), "heap-after-reopen-MiB")
	}
}

// BenchmarkSteady100k is the store's part of issue benchmark 1: 100k
// timers due spread over 5 to 10 s from now are added as fast as one
// enqueue goroutine can (batches of 100), while a dequeue goroutine on the
// wall clock waits for NextDue (polling at most every 0.2 ms), releases
// with Due(1000) and Acks, and a flusher runs every 10 ms. Reported:
// enqueue rate, lateness p50/p99/max of release time against DeliverMs,
// and the early count (must be 0).
func BenchmarkSteady100k(b *testing.B) {
	const n = 100_000
	for i := 0; i < b.N; i++ {
		wall0 := time.Now()
		base := T0
		clock := func() int64 { return base + time.Since(wall0).Milliseconds() }
		s, err := Open(Options{Dir: b.TempDir()}, clock())
		if err != nil {
			b.Fatal(err)
		}
		stop := startFlusher(b, s)
		addDone := make(chan time.Duration)
		go func() {
			start := time.Now()
			batch := make([]Timer, 0, 100)
			for id := int64(1); id <= n; id++ {
				now := clock()
				batch = append(batch, timerAt(id, now+5000+(id*7919)%5000))
				if len(batch) == cap(batch) {
					if err := s.Add(batch, now); err != nil {
						b.Error(err)
						break
					}
					batch = batch[:0]
				}
			}
			addDone <- time.Since(start)
		}()
		lateness := make([]int64, 0, n)
		early := 0
		for len(lateness) < n {
			now := clock()
			if next, ok := s.NextDue(); !ok || next > now {
				time.Sleep(200 * time.Microsecond)
				continue
			}
			bt, err := s.Due(now, 1000)
			if err != nil {
				b.Fatal(err)
			}
			for _, t := range bt.Timers {
				if t.DeliverMs > now {
					early++
				}
				lateness = append(lateness, now-t.DeliverMs)
			}
			must(b, s.Ack(bt))
		}
		add := <-addDone
		stop()
		must(b, s.Close())
		slices.Sort(lateness)
		b.ReportMetric(float64(n)/add.Seconds(), "enqueue/s")
		b.ReportMetric(float64(lateness[n/2]), "p50-late-ms")
		b.ReportMetric(float64(lateness[n*99/100]), "p99-late-ms")
		b.ReportMetric(float64(lateness[n-1]), "max-late-ms")
		b.ReportMetric(float64(early), "early")
	}
}

// startFlusher calls Flush every 10 ms in its own goroutine, as the
// flusher actor does; the returned func stops it.
func startFlusher(b *testing.B, s *Store) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := s.Flush(); err != nil {
					b.Error(err)
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// memNow returns the Go heap in use and the process RSS in bytes.
func memNow() (heap, rss int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap = int64(ms.HeapInuse)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				rss = kb << 10
			}
		}
	}
	return heap, rss
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
