package timerwheel

import (
	"math/rand"
	"strconv"
	"testing"
	"time"
)

// BenchmarkDueAfterAdd is the start of a spread: 100k timers added in
// random order over one second, due 5-10 s after; then the first 300 ms of
// due time are released 10 ms at a time. Nothing had read the TimerLog
// before, so each slot's chain (spread over the whole log) is walked from
// whatever the block cache holds: with the append cache (timerlog
// Options.CacheDueWithinMs, the default) the blocks written for timers due
// within a minute; without it, from the files, a read per record at first.
// Reported: Due time per 10 ms of due time, mean and worst (ns/op counts
// the whole iteration, set-up included, so that -benchtime does not run
// hundreds of set-ups).
func BenchmarkDueAfterAdd(b *testing.B) {
	for _, cacheMs := range []int64{appendCacheMs, 0} {
		b.Run("append-cache-ms="+strconv.FormatInt(cacheMs, 10), func(b *testing.B) {
			old := appendCacheMs
			appendCacheMs = cacheMs
			b.Cleanup(func() { appendCacheMs = old })
			var total, worst time.Duration
			rounds := 0
			for i := 0; i < b.N; i++ {
				s, err := Open(Options{Dir: b.TempDir()}, T0)
				if err != nil {
					b.Fatal(err)
				}
				addSpread(b, s, int64(i))
				for ms := int64(0); ms < 300; ms += 10 {
					start := time.Now()
					for {
						bt, err := s.Due(T0+5000+ms, 4096)
						if err != nil {
							b.Fatal(err)
						}
						must(b, s.Ack(bt))
						if bt.Len() == 0 {
							break
						}
					}
					d := time.Since(start)
					total, worst, rounds = total+d, max(worst, d), rounds+1
				}
				must(b, s.Close())
			}
			b.ReportMetric(float64(total.Microseconds())/float64(rounds), "us/10ms-of-due")
			b.ReportMetric(float64(worst.Microseconds()), "worst-us")
		})
	}
}

// BenchmarkDueAfterIdle measures what the machine does to the first Due
// after the process has idled: the spread above, its first 10 ms of due
// time released at once or after a sleep of 4 s (the idle time of the
// spread scenario between its last send and its due window). As a control
// that involves no wheel code, the same is done to a plain loop (16 MiB
// read, 200k multiplications). Reported: the first Due and the control,
// in µs (ns/op counts the whole iteration, sleeps included, so one
// iteration is about 8 s). On the development VM both are several times slower after the
// sleep (docs/benchmarks.md, "Timer headroom, second pass").
func BenchmarkDueAfterIdle(b *testing.B) {
	control := make([]uint64, 2<<20)
	for i := range control {
		control[i] = uint64(i)
	}
	for _, idle := range []time.Duration{0, 4 * time.Second} {
		b.Run("idle="+idle.String(), func(b *testing.B) {
			var due, ctl time.Duration
			for i := 0; i < b.N; i++ {
				s, err := Open(Options{Dir: b.TempDir()}, T0)
				if err != nil {
					b.Fatal(err)
				}
				addSpread(b, s, int64(i))
				controlLoop(control) // warm
				time.Sleep(idle)
				start := time.Now()
				bt, err := s.Due(T0+5010, 4096)
				if err != nil {
					b.Fatal(err)
				}
				due += time.Since(start)
				must(b, s.Ack(bt))
				time.Sleep(idle)
				start = time.Now()
				controlLoop(control)
				ctl += time.Since(start)
				must(b, s.Close())
			}
			b.ReportMetric(float64(due.Microseconds())/float64(b.N), "first-due-us")
			b.ReportMetric(float64(ctl.Microseconds())/float64(b.N), "control-us")
		})
	}
}

// controlSink keeps controlLoop's result alive.
var controlSink uint64

// controlLoop reads buf a cache line at a time and multiplies: work with no
// wheel code in it.
func controlLoop(buf []uint64) {
	var s uint64
	for i := 0; i < len(buf); i += 8 {
		s += buf[i]
	}
	for i := 0; i < 200_000; i++ {
		s = s*6364136223846793005 + 1442695040888963407
	}
	controlSink += s
}

// addSpread adds 100k timers in random order (seed), due 5-10 s after T0,
// in batches of 1000 added over the first second, then flushes.
func addSpread(b *testing.B, s *Store, seed int64) {
	b.Helper()
	rnd := rand.New(rand.NewSource(seed))
	timers := make([]Timer, 0, 1000)
	for k := 0; k < 100_000; k++ {
		timers = append(timers, timerAt(int64(k+1), T0+5000+rnd.Int63n(5000)))
		if len(timers) == cap(timers) {
			must(b, s.Add(timers, T0+int64(k/100)))
			timers = timers[:0]
		}
	}
	must(b, s.Flush())
}
