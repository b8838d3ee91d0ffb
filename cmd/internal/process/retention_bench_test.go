package process_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// BenchmarkSendDuringRetention measures plain-send throughput (sync sends
// of 1 KiB bodies from 64 goroutines sharing one native producer, or async
// sends with WHEELMQ_BENCH_MODE=async; async flush) on one broker
// with 4 MiB CommitLog segments, alternating runs where retention is idle
// ("plain": nothing is old enough) and runs where it deletes segments while
// the sends go on ("deleting": the retention clock is a year ahead, rounds
// every 100 ms, a segment deletion every 100 ms, each with its consume-queue
// trim), in WHEELMQ_BENCH_ROUNDS rounds (default 8, ABBA order). The parent
// logs the medians, their ratio and the median of the per-round ratios, the
// figures of docs/benchmarks.md; run it with task bench:retention.
func BenchmarkSendDuringRetention(b *testing.B) {
	clock := &fakeClock{}
	n := processtest.Start(b, processtest.Options{Metrics: true, Mutate: func(c *pipeline.Config) {
		c.SegmentSize, c.MaxMessageSize = 4<<20, 64<<10
		c.Retention, c.RetentionAt, c.RetentionInterval = time.Hour, "any", 100*time.Millisecond
		c.Clock = clock.now
	}})
	topic := processtest.Unique("benchret")
	processtest.CreateTopic(b, n, topic, 8)
	native := nativeProducer(b, []string{n.NamesrvAddr()}, producer.WithSendTimeout(10*time.Second),
		producer.WithMaxInflight(asyncWindow, 64<<20))
	body := bytes.Repeat([]byte("r"), 1024)
	ctx := context.Background()
	if _, err := native.Send(ctx, producer.NewMessage(topic, body)); err != nil {
		b.Fatal(err)
	}
	rates := map[string][]float64{}
	var deleted float64
	rounds := 8
	if v, err := strconv.Atoi(os.Getenv("WHEELMQ_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for round := 1; round <= rounds; round++ {
		order := []string{"plain", "deleting"}
		if round%2 == 0 {
			order[0], order[1] = order[1], order[0] // ABBA: drift of the shared machine cancels out
		}
		for _, mode := range order {
			if mode == "deleting" {
				clock.ms.Store(time.Now().Add(365 * 24 * time.Hour).UnixMilli())
			} else {
				clock.ms.Store(0) // the real clock: nothing is an hour old
			}
			runRetention(b, n) // the round under way (with the previous clock) is over
			quiesce(b, n)      // each run starts with dispatch and index caught up
			before := metricValue(b, n, "wheelmq_retention_segments_deleted_total")
			last := 0.0
			b.Run(fmt.Sprintf("%s/%d", mode, round), func(b *testing.B) {
				if os.Getenv("WHEELMQ_BENCH_MODE") != "async" {
					b.SetParallelism(32) // 64 senders on 2 cores
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if _, err := native.Send(ctx, producer.NewMessage(topic, body)); err != nil {
								b.Error(err)
								return
							}
						}
					})
				} else {
					sendAsyncLoop(ctx, b, native, topic, body)
				}
				last = float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(last, "msgs/s")
			})
			rates[mode] = append(rates[mode], last) // the final (timed) run of the sub-benchmark
			if d := metricValue(b, n, "wheelmq_retention_segments_deleted_total") - before; mode == "deleting" {
				deleted += d
			} else if d > 0 {
				b.Fatalf("%v segments deleted in a plain run", d)
			}
		}
	}
	plain, del := median(rates["plain"]), median(rates["deleting"])
	var pairs []float64 // per round: deleting / plain, the two runs next to each other
	for i := range min(len(rates["plain"]), len(rates["deleting"])) {
		pairs = append(pairs, rates["deleting"][i]/rates["plain"][i])
	}
	if plain > 0 && del > 0 {
		b.Logf("plain %.0f msgs/s (runs %.0f)", plain, rates["plain"])
		b.Logf("while deleting %.0f msgs/s (runs %.0f; %.0f segments of 4 MiB deleted)", del, rates["deleting"], deleted)
		b.Logf("ratio of the medians %.3f; median of the per-round ratios %.3f (rounds %.2f)", del/plain, median(pairs), pairs)
	}
}

// quiesce waits until the dispatcher and the index have caught up with the
// CommitLog, so that a run does not pay for the previous one's backlog.
func quiesce(b *testing.B, n *process.Node) {
	b.Helper()
	st := n.Broker().Store()
	deadline := time.Now().Add(2 * time.Minute)
	for st.Dispatched.Load() < st.CommitLog.MaxOffset() || metricValue(b, n, "wheelmq_index_lag_bytes") > 0 {
		if time.Now().After(deadline) {
			b.Fatal("dispatch or index still behind after 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
