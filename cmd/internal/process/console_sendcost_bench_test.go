package process_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// BenchmarkConsoleSendCost measures sync sends (native producer, 32
// goroutines, 256-byte bodies) against a broker without the console, with
// the console and nobody looking, and with the console watched: a page
// and its live part fetched every 200 ms (ten times what a browser's tab
// does), the stages and timer pages in turn.
func BenchmarkConsoleSendCost(b *testing.B) {
	for _, mode := range []string{"off", "idle", "watched"} {
		b.Run(mode, func(b *testing.B) {
			n := processtest.Start(b, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = mode != "off" }})
			topic := processtest.Unique("cost")
			processtest.CreateTopic(b, n, topic, 8)
			p := nativeProducer(b, []string{n.NamesrvAddr()}, producer.WithSendTimeout(10*time.Second))
			body := bytes.Repeat([]byte("w"), 256)
			ctx := context.Background()
			if _, err := p.Send(ctx, producer.NewMessage(topic, body)); err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if mode == "watched" {
				wg.Add(1)
				go func() { // the watcher: owned here, stopped below
					defer wg.Done()
					cl := &http.Client{Timeout: 5 * time.Second}
					tick := time.NewTicker(200 * time.Millisecond)
					defer tick.Stop()
					pages := []string{"/stages?partial=1", "/timers?range=year&partial=1", "/", "/topics"}
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						if resp, err := cl.Get("http://" + n.MetricsAddr() + pages[i%len(pages)]); err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}
				}()
			}
			b.SetParallelism(16)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Send(ctx, producer.NewMessage(topic, body)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.StopTimer()
			close(stop)
			wg.Wait()
		})
	}
}
