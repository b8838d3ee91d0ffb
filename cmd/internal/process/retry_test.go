package process_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestConsumeRetryLater has a consumer ask for a retry (delay level 1, 1 s):
// the message comes back through %RETRY%<group> after the delay, on its
// original topic, with its reconsume count raised.
func TestConsumeRetryLater(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("retry")
	processtest.CreateTopic(t, n, topic, 1)
	group := processtest.Unique("cg")
	// The group's retry topic exists before the consumer starts (the broker
	// would create it at the first heartbeat, after the client's first
	// rebalance, which then finds it at its next one, 20 s later): the
	// retry is taken up at once.
	processtest.CreateTopic(t, n, meta.RetryGroupTopicPrefix+group, 1)
	done := make(chan struct{})
	got := retryConsumer(t, n, topic, group, func(ctx context.Context, seen int) consumer.ConsumeResult {
		if seen == 1 {
			cc, _ := primitive.GetConcurrentlyCtx(ctx)
			cc.DelayLevelWhenNextConsume = 1
			return consumer.ConsumeRetryLater
		}
		if seen == 2 {
			close(done)
		}
		return consumer.ConsumeSuccess
	})
	p := processtest.Producer(t, n.NamesrvAddr())
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("again"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("retry never arrived; deliveries: %+v", got())
	}
	first, second := got()[0], got()[1]
	if second.topic != topic || second.reconsum != 1 {
		t.Fatalf("retry delivery: topic %q reconsumeTimes %d", second.topic, second.reconsum)
	}
	if gap := second.at.Sub(first.at); gap < time.Second {
		t.Fatalf("retry came back after %s, before its 1 s delay", gap)
	}
}

// retryDelivery is one delivery to a retryConsumer.
type retryDelivery struct {
	at       time.Time
	topic    string
	reconsum int32
}

// retryConsumer starts an official Go push consumer of group on topic
// (from the first offset) that records every delivery and answers it with
// decide(ctx, deliveries so far); got returns the deliveries.
func retryConsumer(t *testing.T, n *process.Node, topic, group string,
	decide func(ctx context.Context, seen int) consumer.ConsumeResult) (got func() []retryDelivery) {
	t.Helper()
	var mu sync.Mutex
	var seen []retryDelivery
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{n.NamesrvAddr()})),
		consumer.WithGroupName(group), consumer.WithInstance(processtest.Unique("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				seen = append(seen, retryDelivery{time.Now(), m.Topic, m.ReconsumeTimes})
			}
			return decide(ctx, len(seen)), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return func() []retryDelivery {
		mu.Lock()
		defer mu.Unlock()
		return append([]retryDelivery(nil), seen...)
	}
}
