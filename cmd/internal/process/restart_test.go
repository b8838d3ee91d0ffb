package process_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestRestartKeepsMessagesAndOffsets stops a broker cleanly and starts a new
// one on the same data directory: stored messages and committed consumer
// offsets survive.
func TestRestartKeepsMessagesAndOffsets(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	topic := processtest.Unique("restart")
	group := processtest.Unique("cg")
	ctx := context.Background()

	n1 := processtest.Start(t, processtest.Options{Dir: dir})
	processtest.CreateTopic(t, n1, topic, 2)
	p1 := processtest.Producer(t, n1.NamesrvAddr())
	var first []string
	for i := 0; i < 30; i++ {
		body := fmt.Sprintf("before-%d", i)
		if _, err := p1.SendSync(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("send: %v", err)
		}
		first = append(first, body)
	}
	c1, rec1 := processtest.PushConsumer(t, n1.NamesrvAddr(), group, topic, "*")
	if !rec1.WaitFor(len(first), 30*time.Second) {
		t.Fatalf("first consumer got %d of %d", rec1.Len(), len(first))
	}
	// The client persists its offsets every 5 s: once the broker holds
	// them at the queues' ends, the shutdown cannot leave anything behind.
	processtest.WaitCommitted(t, n1.BrokerAddr(), group, topic, 2, 20*time.Second)
	if err := c1.Shutdown(); err != nil {
		t.Fatalf("consumer shutdown: %v", err)
	}
	_ = p1.Shutdown()
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n1.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}

	n2 := processtest.Start(t, processtest.Options{Dir: dir})
	processtest.WaitRoute(t, n2.NamesrvAddr(), topic)
	p2 := processtest.Producer(t, n2.NamesrvAddr())
	var second []string
	for i := 0; i < 10; i++ {
		body := fmt.Sprintf("after-%d", i)
		if _, err := p2.SendSync(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("send after restart: %v", err)
		}
		second = append(second, body)
	}
	_, rec2 := processtest.PushConsumer(t, n2.NamesrvAddr(), group, topic, "*")
	if !rec2.WaitFor(len(second), 30*time.Second) {
		t.Fatalf("same group after restart got %d of %d", rec2.Len(), len(second))
	}
	time.Sleep(time.Second)
	sameSet(t, bodies(rec2.Snapshot()), second) // committed offsets survived: nothing old again

	_, rec3 := processtest.PushConsumer(t, n2.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	all := append(append([]string{}, first...), second...)
	if !rec3.WaitFor(len(all), 30*time.Second) {
		t.Fatalf("new group after restart got %d of %d", rec3.Len(), len(all))
	}
	time.Sleep(300 * time.Millisecond)
	sameSet(t, bodies(rec3.Snapshot()), all) // every message survived
}
