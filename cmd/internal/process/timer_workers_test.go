package process_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestTimerDequeueWorkersShareTheBatches runs the broker with three
// dequeue_message stages (--timer-dequeue-workers 3): 300 timers due over
// 600 ms with the official Go client all arrive once, none early, and each
// of the three workers took batches (its message count in /metrics).
func TestTimerDequeueWorkersShareTheBatches(t *testing.T) {
	const workers, n = 3, 300
	node := processtest.Start(t, processtest.Options{Metrics: true, Mutate: func(c *pipeline.Config) {
		c.TimerDequeueWorkers = workers
	}})
	topic := processtest.Unique("timerworkers")
	processtest.CreateTopic(t, node, topic, 4)
	_, rec := processtest.PushConsumer(t, node.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	p := processtest.Producer(t, node.NamesrvAddr())
	due := map[string]int64{}
	start := time.Now().UnixMilli() + 1500
	for i := 0; i < n; i++ {
		at := start + int64(i)*2
		body := fmt.Sprintf("w-%d", i)
		m := primitive.NewMessage(topic, []byte(body))
		m.WithDelayTimestamp(time.UnixMilli(at))
		res, err := p.SendSync(context.Background(), m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
		due[body] = at
	}
	if !rec.WaitFor(n, 30*time.Second) {
		t.Fatalf("received %d of %d timer messages", rec.Len(), n)
	}
	time.Sleep(300 * time.Millisecond) // duplicates would show up now
	seen := map[string]bool{}
	for _, m := range rec.Snapshot() {
		body := string(m.Body)
		want, ok := due[body]
		if !ok || seen[body] {
			t.Fatalf("unexpected or duplicate message %q", body)
		}
		seen[body] = true
		if m.StoreTimestamp < want {
			t.Fatalf("%s delivered early: stored at %d, due %d", body, m.StoreTimestamp, want)
		}
	}
	for i := 0; i < timer.MaxDequeueWorkers; i++ {
		got := scrape(t, node.MetricsAddr(), `wheelmq_actor_messages_total{stage="`+timer.DequeueWorker(i)+`"}`)
		switch {
		case i < workers && got == 0:
			t.Errorf("%s took no batch", timer.DequeueWorker(i))
		case i >= workers && got != 0:
			t.Errorf("%s exists (%v messages) with %d workers", timer.DequeueWorker(i), got, workers)
		}
	}
}
