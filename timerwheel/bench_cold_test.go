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
// Reported: Due time per 10 ms of due time, mean and worst.
func BenchmarkDueAfterAdd(b *testing.B) {
	for _, cacheMs := range []int64{appendCacheMs, 0} {
		b.Run("append-cache-ms="+strconv.FormatInt(cacheMs, 10), func(b *testing.B) {
			old := appendCacheMs
			appendCacheMs = cacheMs
			b.Cleanup(func() { appendCacheMs = old })
			var total, worst time.Duration
			rounds := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, err := Open(Options{Dir: b.TempDir()}, T0)
				if err != nil {
					b.Fatal(err)
				}
				rnd := rand.New(rand.NewSource(int64(i)))
				timers := make([]Timer, 0, 1000)
				for k := 0; k < 100_000; k++ {
					timers = append(timers, timerAt(int64(k+1), T0+5000+rnd.Int63n(5000)))
					if len(timers) == cap(timers) {
						must(b, s.Add(timers, T0+int64(k/100)))
						timers = timers[:0]
					}
				}
				must(b, s.Flush())
				b.StartTimer()
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
				b.StopTimer()
				must(b, s.Close())
			}
			b.ReportMetric(float64(total.Microseconds())/float64(rounds), "us/10ms-of-due")
			b.ReportMetric(float64(worst.Microseconds()), "worst-us")
		})
	}
}
