package process_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// The order in which a backlog of mixed-priority messages is delivered:
// messages of random priorities 0..backlogLevels-1 are all stored in a
// PRIORITY topic of backlogLevels queues before any consumer starts, then
// consumed once by a v5 SimpleConsumer (POP, over gRPC) and once, in
// another group, by the official Go push consumer (PULL_MESSAGE), each
// recording the order in which it got them. TestPriorityBacklogOrder is
// the short form (2,000 messages); BenchmarkPriorityBacklog (task
// bench:priority) the long one (100,000, WHEELMQ_PRIORITY_BACKLOG).

// backlogLevels is the backlog topic's priority levels (and queues).
const backlogLevels = 8

// deliveryOrder measures how far a delivery order is from highest-first.
type deliveryOrder struct {
	msgs int64
	// inversions: pairs delivered lower priority first; pairs: pairs of
	// different priorities (inversions/pairs is 0 highest-first, about 0.5
	// for a random order, 1 lowest-first).
	inversions, pairs int64
	// ahead: messages delivered while one of a higher priority was still
	// waiting.
	ahead int64
}

// orderOf measures prios, the priorities in delivery order.
func orderOf(prios []int) deliveryOrder {
	var after [backlogLevels]int64 // priorities delivered after the current one
	o := deliveryOrder{msgs: int64(len(prios))}
	var count [backlogLevels]int64
	for _, p := range prios {
		count[p]++
	}
	for i := len(prios) - 1; i >= 0; i-- {
		p := prios[i]
		higher := int64(0)
		for q := p + 1; q < backlogLevels; q++ {
			higher += after[q]
		}
		o.inversions += higher
		if higher > 0 {
			o.ahead++
		}
		after[p]++
	}
	total := o.msgs * (o.msgs - 1) / 2
	same := int64(0)
	for _, c := range count {
		same += c * (c - 1) / 2
	}
	o.pairs = total - same
	return o
}

// ratio is inversions over pairs (0 when there are none).
func (o deliveryOrder) ratio() float64 {
	if o.pairs == 0 {
		return 0
	}
	return float64(o.inversions) / float64(o.pairs)
}

func (o deliveryOrder) String() string {
	return fmt.Sprintf("%d messages, %d inversions of %d pairs (%.4f), %d delivered ahead of a higher priority (%.2f%%)",
		o.msgs, o.inversions, o.pairs, o.ratio(), o.ahead, 100*float64(o.ahead)/float64(max(o.msgs, 1)))
}

// priorityNode starts a broker with its gRPC endpoint and a PRIORITY topic
// of queues queues.
func priorityNode(tb testing.TB, topic string, queues int) *process.Node {
	tb.Helper()
	n := processtest.Start(tb, processtest.Options{MutateNode: func(c *process.Config) { c.GRPC.Listen = "127.0.0.1:0" }})
	createPriorityTopic(tb, n, topic, queues)
	return n
}

func createPriorityTopic(tb testing.TB, n *process.Node, topic string, queues int) {
	tb.Helper()
	q := strconv.Itoa(queues)
	if r := processtest.Invoke(tb, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=PRIORITY"}, nil)); r.Code != remoting.Success {
		tb.Fatalf("create PRIORITY topic: %d %s", r.Code, r.Remark)
	}
	processtest.WaitRoute(tb, n.NamesrvAddr(), topic)
}

// sendBacklog sends count messages of random priorities (seeded) from 32
// goroutines through the official Go client; body "priority:seq".
func sendBacklog(tb testing.TB, p interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, topic string, count int, seed uint64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	prios := make([]int, count)
	for i := range prios {
		prios[i] = rng.IntN(backlogLevels)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed sync.Once
	const senders = 32
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < count; i += senders {
				m := primitive.NewMessage(topic, []byte(strconv.Itoa(prios[i])+":"+strconv.Itoa(i)))
				m.WithProperty(message.PropPriority, strconv.Itoa(prios[i]))
				if _, err := p.SendSync(ctx, m); err != nil {
					failed.Do(func() { tb.Errorf("send %d: %v", i, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
}

// waitStored waits until topic's queues hold count messages in all.
func waitStored(tb testing.TB, n *process.Node, topic string, queues, count int, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		total := 0
		for q := range queues {
			r := processtest.Invoke(tb, n.BrokerAddr(), remoting.NewRequest(remoting.GetMaxOffset,
				map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil))
			off, _ := strconv.Atoi(r.Field("offset"))
			total += off
		}
		if total >= count {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d messages in the consume queues after %v", total, count, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// priorityOf parses a backlog body "priority:seq".
func priorityOf(tb testing.TB, body []byte) (prio int, seq string) {
	p, s, ok := strings.Cut(string(body), ":")
	v, err := strconv.Atoi(p)
	if !ok || err != nil || v < 0 || v >= backlogLevels {
		tb.Fatalf("not a backlog body: %q", body)
	}
	return v, s
}

// popBacklog receives count messages with a v5 SimpleConsumer (32 a
// receive, one after the other; acks from 16 goroutines) and returns their
// priorities in the order received (first deliveries only) and the time
// it took.
func popBacklog(tb testing.TB, n *process.Node, group, topic string, count int, within time.Duration) ([]int, time.Duration) {
	tb.Helper()
	tb.Setenv("rocketmq.client.logRoot", tb.TempDir())
	tb.Setenv("rocketmq.client.logLevel", "error")
	rmq.ResetLogger()
	rmq.EnableSsl = false
	c, err := rmq.NewSimpleConsumer(&rmq.Config{Endpoint: n.GRPCAddr(), ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmq.WithSimpleAwaitDuration(2*time.Second), rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(); err != nil {
		tb.Fatalf("start v5 simple consumer: %v", err)
	}
	defer func() { _ = c.GracefulStop() }()
	acks := make(chan *rmq.MessageView, 1024)
	var ackWG sync.WaitGroup
	var ackErrs sync.Map
	for range 16 {
		ackWG.Add(1)
		go func() {
			defer ackWG.Done()
			for mv := range acks {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := c.Ack(ctx, mv); err != nil {
					ackErrs.Store(err.Error(), true)
				}
				cancel()
			}
		}()
	}
	seen := make(map[string]bool, count)
	order := make([]int, 0, count)
	start := time.Now()
	deadline := start.Add(within)
	for len(order) < count && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		msgs, _ := c.Receive(ctx, 32, 60*time.Second) // none: MESSAGE_NOT_FOUND, receive again
		cancel()
		for _, mv := range msgs {
			prio, seq := priorityOf(tb, mv.GetBody())
			if !seen[seq] {
				seen[seq] = true
				order = append(order, prio)
			}
			acks <- mv
		}
	}
	took := time.Since(start)
	close(acks)
	ackWG.Wait()
	ackErrs.Range(func(k, _ any) bool { tb.Logf("ack: %v", k); return true })
	if len(order) < count {
		tb.Fatalf("POP: %d of %d messages within %v", len(order), count, within)
	}
	return order, took
}

// pullBacklog consumes count messages with the official Go push consumer
// (PULL_MESSAGE) from the first offset and returns their priorities in the
// order its listener got them, and the time it took.
func pullBacklog(tb testing.TB, n *process.Node, group, topic string, count int, within time.Duration) ([]int, time.Duration) {
	tb.Helper()
	start := time.Now()
	_, rec := processtest.PushConsumer(tb, n.NamesrvAddr(), group, topic, "*")
	if !rec.WaitUntil(func(ms []*primitive.MessageExt) bool { return len(ms) >= count }, within) {
		tb.Fatalf("pull: %d of %d messages within %v", rec.Len(), count, within)
	}
	took := time.Since(start)
	seen := make(map[string]bool, count)
	order := make([]int, 0, count)
	for _, m := range rec.Snapshot() {
		prio, seq := priorityOf(tb, m.Body)
		if !seen[seq] {
			seen[seq] = true
			order = append(order, prio)
		}
	}
	return order, took
}

// TestPriorityBacklogOrder: a backlog of 2,000 messages of random
// priorities 0-7, all stored before consumers start, is received by a v5
// SimpleConsumer strictly highest first (no inversion: every pop reads the
// queues highest first) and by the official Go push consumer all of it
// (in an order the client chooses; logged).
func TestPriorityBacklogOrder(t *testing.T) {
	const count = 2000
	topic := processtest.Unique("prio_backlog")
	n := priorityNode(t, topic, backlogLevels)
	sendBacklog(t, processtest.Producer(t, n.NamesrvAddr()), topic, count, 28)
	waitStored(t, n, topic, backlogLevels, count, 30*time.Second)
	popped, took := popBacklog(t, n, processtest.Unique("prio_pop"), topic, count, 60*time.Second)
	o := orderOf(popped)
	t.Logf("POP (v5 SimpleConsumer): %v in %v", o, took)
	if o.inversions != 0 {
		t.Fatalf("POP delivered the backlog out of priority order: %v", o)
	}
	pulled, took := pullBacklog(t, n, processtest.Unique("prio_pull"), topic, count, 60*time.Second)
	t.Logf("pull (official push consumer): %v in %v", orderOf(pulled), took)
	if len(pulled) != count {
		t.Fatalf("pull: %d distinct messages, want %d", len(pulled), count)
	}
}

// TestOrderOf checks the measure on small orders.
func TestOrderOf(t *testing.T) {
	for _, tc := range []struct {
		prios             []int
		inversions, ahead int64
		pairs             int64
	}{
		{[]int{3, 3, 2, 1, 0}, 0, 0, 9},
		{[]int{0, 1, 2, 3}, 6, 3, 6},
		{[]int{2, 0, 3, 1}, 3, 2, 6},
	} {
		o := orderOf(tc.prios)
		if o.inversions != tc.inversions || o.ahead != tc.ahead || o.pairs != tc.pairs {
			t.Errorf("%v: %+v, want inversions %d ahead %d pairs %d", tc.prios, o, tc.inversions, tc.ahead, tc.pairs)
		}
	}
}

// backlogSize is WHEELMQ_PRIORITY_BACKLOG, else 100,000.
func backlogSize(tb testing.TB) int {
	if s := os.Getenv("WHEELMQ_PRIORITY_BACKLOG"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			tb.Fatalf("WHEELMQ_PRIORITY_BACKLOG=%q: want a positive number", s)
		}
		return v
	}
	return 100_000
}

// ratioSends is WHEELMQ_PRIORITY_RATIO_SENDS, else 51,200 of each kind.
func ratioSends(tb testing.TB) int {
	if s := os.Getenv("WHEELMQ_PRIORITY_RATIO_SENDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			tb.Fatalf("WHEELMQ_PRIORITY_RATIO_SENDS=%q: want a positive number", s)
		}
		return v
	}
	return 51_200
}

// BenchmarkPriorityBacklog (task bench:priority; run it with -benchtime
// 1x: one run whatever b.N) measures, against one in-process broker in one
// run: the send rate of priority messages against plain ones (sendRatio,
// WHEELMQ_PRIORITY_RATIO_SENDS of each; issue 28 asks >= 0.9x), then a
// backlog of WHEELMQ_PRIORITY_BACKLOG messages (100,000) of random
// priorities 0-7 sent to an 8-queue PRIORITY topic and stored before any
// consumer starts, and the order in which it is delivered to a v5
// SimpleConsumer (POP) and to the official Go push consumer (pull): the
// inversions (pairs delivered lower priority first) over the pairs of
// different priorities, the messages delivered while a higher one waited,
// and each consumer's rate.
func BenchmarkPriorityBacklog(b *testing.B) {
	count, sends := backlogSize(b), ratioSends(b)
	plainTopic, ratioTopic, topic := processtest.Unique("bench_plain"), processtest.Unique("bench_prio"), processtest.Unique("bench_backlog")
	n := priorityNode(b, topic, backlogLevels)
	processtest.CreateTopic(b, n, plainTopic, 4)
	createPriorityTopic(b, n, ratioTopic, 4)
	p := processtest.Producer(b, n.NamesrvAddr())
	b.ResetTimer()
	plain, prio, sent := sendRatio(b, p, plainTopic, ratioTopic, sends)
	b.ReportMetric(float64(sent)/plain.Seconds(), "plain_msgs/s")
	b.ReportMetric(float64(sent)/prio.Seconds(), "priority_msgs/s")
	b.ReportMetric(plain.Seconds()/prio.Seconds(), "priority/plain")
	b.Logf("sends: plain %.0f msgs/s, priority %.0f msgs/s, priority/plain %.3f (%d of each)",
		float64(sent)/plain.Seconds(), float64(sent)/prio.Seconds(), plain.Seconds()/prio.Seconds(), sent)

	start := time.Now()
	sendBacklog(b, p, topic, count, 28)
	b.ReportMetric(float64(count)/time.Since(start).Seconds(), "backlog_send_msgs/s")
	waitStored(b, n, topic, backlogLevels, count, 5*time.Minute)
	within := time.Duration(count/100+60) * time.Second
	popped, popTook := popBacklog(b, n, processtest.Unique("prio_pop"), topic, count, within)
	pulled, pullTook := pullBacklog(b, n, processtest.Unique("prio_pull"), topic, count, within)
	b.StopTimer()
	for _, r := range []struct {
		name  string
		order []int
		took  time.Duration
	}{{"pop", popped, popTook}, {"pull", pulled, pullTook}} {
		o := orderOf(r.order)
		b.ReportMetric(o.ratio(), r.name+"_inversions/pairs")
		b.ReportMetric(100*float64(o.ahead)/float64(max(o.msgs, 1)), r.name+"_ahead_%")
		b.ReportMetric(float64(o.msgs)/r.took.Seconds(), r.name+"_msgs/s")
		b.Logf("%s: %v in %v", r.name, o, r.took.Round(time.Millisecond))
	}
}
