package process_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// consumed is one message an orderly consumer handled, with when.
type consumed struct {
	consumer   string
	queue      int
	seq        int // batch*100 + index: increases in send order within a queue
	start, end time.Time
}

// orderLog collects what the orderly consumers of a test handled.
type orderLog struct {
	mu  sync.Mutex
	all []consumed
}

func (l *orderLog) add(c consumed) {
	l.mu.Lock()
	l.all = append(l.all, c)
	l.mu.Unlock()
}

func (l *orderLog) snapshot() []consumed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]consumed(nil), l.all...)
}

// seen is the set of "queue/seq" handled at least once.
func (l *orderLog) seen() map[string]string {
	out := map[string]string{}
	for _, c := range l.snapshot() {
		out[fmt.Sprintf("%d/%d", c.queue, c.seq)] = c.consumer
	}
	return out
}

// startOrderly starts an official Go orderly push consumer named name.
func startOrderly(t *testing.T, namesrv, group, topic, name string, log *orderLog) interface{ Shutdown() error } {
	t.Helper()
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		consumer.WithGroupName(group),
		consumer.WithInstance(processtest.Unique(name)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(true),
		consumer.WithRebalanceLockInterval(time.Second),
	)
	if err != nil {
		t.Fatalf("new orderly consumer: %v", err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				start := time.Now()
				time.Sleep(2 * time.Millisecond) // give each consumption a width the overlap check can see
				seq, _ := strconv.Atoi(strings.TrimPrefix(string(m.Body), "seq-"))
				log.add(consumed{consumer: name, queue: m.Queue.QueueId, seq: seq, start: start, end: time.Now()})
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start orderly consumer: %v", err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

// lockHolders asks the broker's clients stage who holds the group's locks
// on topic's queues: consumer name -> queue ids.
func lockHolders(t *testing.T, n *process.Node, group, topic string) map[string][]int {
	t.Helper()
	ch := make(chan map[clients.MessageQueue]string, 1)
	n.Broker().Pipeline().Stage(clients.StageName).Send(&clients.ListLocks{Group: group,
		Reply: func(m map[clients.MessageQueue]string) { ch <- m }})
	select {
	case m := <-ch:
		out := map[string][]int{}
		for mq, id := range m {
			if mq.Topic != topic {
				continue // the group's %RETRY% queue is locked too
			}
			name := id[strings.Index(id, "@")+1:]
			name = name[:strings.Index(name, "_")] // Unique("A") -> "A_<pid>_<n>"
			out[name] = append(out[name], int(mq.QueueID))
		}
		for _, q := range out {
			sort.Ints(q)
		}
		return out
	case <-time.After(5 * time.Second):
		t.Fatal("ListLocks not answered")
		return nil
	}
}

func waitHolders(t *testing.T, n *process.Node, group, topic string, within time.Duration, want func(map[string][]int) bool) map[string][]int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		h := lockHolders(t, n, group, topic)
		if want(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue locks of %s after %s: %v", group, within, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sendSeq sends perQueue messages to each queue, in order, bodies
// "seq-<batch*100+i>".
func sendSeq(t *testing.T, p interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, topic, broker string, queues, batch, perQueue int) {
	t.Helper()
	for i := range perQueue {
		for q := range queues {
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("seq-%d", batch*100+i)))
			m.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: broker, QueueId: q}
			res, err := p.SendSync(context.Background(), m)
			if err != nil || res.MessageQueue.QueueId != q {
				t.Fatalf("send batch %d #%d to queue %d: %v %+v", batch, i, q, err, res)
			}
		}
	}
}

func waitSeen(t *testing.T, log *orderLog, queues, batch, perQueue int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		seen, missing := log.seen(), 0
		for q := range queues {
			for i := range perQueue {
				if _, ok := seen[fmt.Sprintf("%d/%d", q, batch*100+i)]; !ok {
					missing++
				}
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %d: %d of %d messages not consumed after %s", batch, missing, queues*perQueue, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOrderlyConsumersLockQueues runs the official Go orderly push consumer
// against the broker's queue locks: one consumer gets every queue; a second
// one in the group gets half of them and the two never consume the same
// queue at the same time; when the first stops, the second takes its queues
// at the rebalance its leaving triggers. Every consumer sees each queue's
// messages in send order.
func TestOrderlyConsumersLockQueues(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	const queues, perQueue = 4, 8
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) {
		// A queue that rebalance takes from a Go consumer is not unlocked by
		// it (the client never unlocks on rebalance): a short expiry lets the
		// newcomer get it at its next periodic rebalance instead of after 60 s.
		c.OrderlyLockExpiry = 3 * time.Second
	}})
	topic, group := processtest.Unique("orderly"), processtest.Unique("og")
	processtest.CreateTopic(t, n, topic, queues)
	p := processtest.Producer(t, n.NamesrvAddr(), producer.WithQueueSelector(producer.NewManualQueueSelector()))
	broker := n.Broker().Pipeline().Config().BrokerName
	log := &orderLog{}

	a := startOrderly(t, n.NamesrvAddr(), group, topic, "A", log)
	waitHolders(t, n, group, topic, 20*time.Second, func(h map[string][]int) bool { return len(h["A"]) == queues })
	sendSeq(t, p, topic, broker, queues, 1, perQueue)
	waitSeen(t, log, queues, 1, perQueue, 20*time.Second)

	startOrderly(t, n.NamesrvAddr(), group, topic, "B", log)
	// B's first locks fail while A's leases live; B retries at its next
	// rebalance (the Go client rebalances every 20 s).
	h := waitHolders(t, n, group, topic, 45*time.Second, func(h map[string][]int) bool {
		return len(h["A"]) == queues/2 && len(h["B"]) == queues/2
	})
	sendSeq(t, p, topic, broker, queues, 2, perQueue)
	waitSeen(t, log, queues, 2, perQueue, 20*time.Second)
	owner := map[int]string{}
	for name, qs := range h {
		for _, q := range qs {
			owner[q] = name
		}
	}
	for _, c := range log.snapshot() {
		if c.seq/100 == 2 && owner[c.queue] != c.consumer {
			t.Errorf("batch 2: queue %d (locked by %s) consumed by %s", c.queue, owner[c.queue], c.consumer)
		}
	}

	if err := a.Shutdown(); err != nil { // unlocks its queues, then leaves the group
		t.Fatalf("shutdown A: %v", err)
	}
	// Within one rebalance: the one A's leaving triggers, well before the
	// next periodic one (20 s).
	waitHolders(t, n, group, topic, 15*time.Second, func(h map[string][]int) bool { return len(h["B"]) == queues && len(h["A"]) == 0 })
	sendSeq(t, p, topic, broker, queues, 3, perQueue)
	waitSeen(t, log, queues, 3, perQueue, 20*time.Second)
	for _, c := range log.snapshot() {
		if c.seq/100 == 3 && c.consumer != "B" {
			t.Errorf("batch 3 message %d of queue %d consumed by %s after it stopped", c.seq, c.queue, c.consumer)
		}
	}
	checkOrder(t, log.snapshot())
}

// checkOrder: per consumer and queue, messages came in send order; per
// queue, the two consumers never consumed at the same time.
func checkOrder(t *testing.T, all []consumed) {
	t.Helper()
	type key struct {
		consumer string
		queue    int
	}
	last := map[key]int{}
	byQueue := map[int][]consumed{}
	for _, c := range all {
		k := key{c.consumer, c.queue}
		if prev, ok := last[k]; ok && c.seq <= prev {
			t.Errorf("%s consumed queue %d out of order: %d after %d", c.consumer, c.queue, c.seq, prev)
		}
		last[k] = c.seq
		byQueue[c.queue] = append(byQueue[c.queue], c)
	}
	for q, cs := range byQueue {
		for i, x := range cs {
			for _, y := range cs[i+1:] {
				if x.consumer != y.consumer && x.start.Before(y.end) && y.start.Before(x.end) {
					t.Errorf("queue %d consumed by %s and %s at the same time (%d and %d)", q, x.consumer, y.consumer, x.seq, y.seq)
				}
			}
		}
	}
}
