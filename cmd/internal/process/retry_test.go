package process_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
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
	type delivery struct {
		at       time.Time
		topic    string
		reconsum int32
	}
	var mu sync.Mutex
	var got []delivery
	done := make(chan struct{})
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
				got = append(got, delivery{time.Now(), m.Topic, m.ReconsumeTimes})
			}
			if len(got) == 1 {
				cc, _ := primitive.GetConcurrentlyCtx(ctx)
				cc.DelayLevelWhenNextConsume = 1
				return consumer.ConsumeRetryLater, nil
			}
			if len(got) == 2 {
				close(done)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	p := processtest.Producer(t, n.NamesrvAddr())
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("again"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(70 * time.Second): // a new group's retry queue is assigned at the client's next rebalance (20 s)
		t.Fatalf("retry never arrived; deliveries: %+v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	first, second := got[0], got[1]
	if second.topic != topic || second.reconsum != 1 {
		t.Fatalf("retry delivery: topic %q reconsumeTimes %d", second.topic, second.reconsum)
	}
	if gap := second.at.Sub(first.at); gap < time.Second {
		t.Fatalf("retry came back after %s, before its 1 s delay", gap)
	}
}
