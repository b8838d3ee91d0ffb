package process_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// asyncWindow bounds the async sends in flight in BenchmarkNativeProducer.
const asyncWindow = 2048

// BenchmarkNativeProducer compares the native producer with the official Go client
// against one in-process wheelmq broker (async flush), 256-byte bodies, in
// the same run: sync sends from one goroutine, sync sends from 64
// goroutines, and async sends. Each sub-benchmark reports msgs/s; the
// parent logs the native/official ratios.
func BenchmarkNativeProducer(b *testing.B) {
	n := processtest.Start(b, processtest.Options{})
	topic := processtest.Unique("bench")
	processtest.CreateTopic(b, n, topic, 8)
	ns := []string{n.NamesrvAddr()}
	// Async sends in flight are bounded below the broker's per-connection
	// bound (pipeline.Config.MaxInflightPerConn, 4096), past which it answers
	// SYSTEM_BUSY; the official client gets the same bound below.
	native := nativeProducer(b, ns, producer.WithSendTimeout(10*time.Second), producer.WithMaxInflight(asyncWindow, 64<<20))
	official := processtest.Producer(b, n.NamesrvAddr())
	body := bytes.Repeat([]byte("w"), 256)
	ctx := context.Background()
	rates := map[string]float64{}
	run := func(name string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			f(b)
			r := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(r, "msgs/s")
			rates[name] = r
		})
	}
	warm := func() { // routes and connections ready before timing
		if _, err := native.Send(ctx, producer.NewMessage(topic, body)); err != nil {
			b.Fatal(err)
		}
		if _, err := official.SendSync(ctx, primitive.NewMessage(topic, body)); err != nil {
			b.Fatal(err)
		}
	}
	warm()

	run("sync/native", func(b *testing.B) {
		for b.Loop() {
			if _, err := native.Send(ctx, producer.NewMessage(topic, body)); err != nil {
				b.Fatal(err)
			}
		}
	})
	run("sync/official", func(b *testing.B) {
		for b.Loop() {
			if _, err := official.SendSync(ctx, primitive.NewMessage(topic, body)); err != nil {
				b.Fatal(err)
			}
		}
	})
	parallel := func(send func() error) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetParallelism(32) // 64 senders on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := send(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	run("sync64/native", parallel(func() error {
		_, err := native.Send(ctx, producer.NewMessage(topic, body))
		return err
	}))
	run("sync64/official", parallel(func() error {
		_, err := official.SendSync(ctx, primitive.NewMessage(topic, body))
		return err
	}))
	run("async/native", func(b *testing.B) { sendAsyncLoop(ctx, b, native, topic, body) })
	run("async/official", func(b *testing.B) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, asyncWindow)
		for b.Loop() {
			wg.Add(1)
			sem <- struct{}{}
			if err := official.SendAsync(ctx, func(_ context.Context, _ *primitive.SendResult, err error) {
				if err != nil {
					b.Error(err)
				}
				<-sem
				wg.Done()
			}, primitive.NewMessage(topic, body)); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
	})
	for _, mode := range []string{"sync", "sync64", "async"} {
		if o := rates[mode+"/official"]; o > 0 {
			b.Logf("%s: native %.0f msgs/s, official %.0f msgs/s, ratio %.2fx", mode, rates[mode+"/native"], o, rates[mode+"/native"]/o)
		}
	}
}

// sendAsyncLoop sends one message to topic per b.Loop iteration with
// SendAsync (the producer bounds what is in flight) and waits for every
// answer; a failed send fails b.
func sendAsyncLoop(ctx context.Context, b *testing.B, p *producer.Producer, topic string, body []byte) {
	var wg sync.WaitGroup
	for b.Loop() {
		wg.Add(1)
		if err := p.SendAsync(ctx, producer.NewMessage(topic, body), func(_ *producer.SendResult, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		}); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
}
