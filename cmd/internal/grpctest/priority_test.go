package grpctest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestSimpleConsumerPriority (issue 28 item 1): a topic of type PRIORITY
// with 4 queues; the official Go v5 SDK sends a backlog of mixed
// priorities (Message.SetPriority) in shuffled order; each is stored with
// its PRIORITY property in queue min(priority, 3); a SimpleConsumer then
// receives them highest priority first, and a message left un-acked comes
// back before any lower priority one (a retry keeps its priority). A
// message without a priority is refused by the PRIORITY topic.
func TestSimpleConsumerPriority(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	withSSL(t, false)
	n := node(t, nil, nil)
	topic, group := processtest.Unique("grpc_prio"), processtest.Unique("grpc_prio_cg")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=PRIORITY",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create PRIORITY topic: %d %s", r.Code, r.Remark)
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@prio"), 20*time.Second)
	defer cancel()
	route, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	if err != nil || len(route.GetMessageQueues()) == 0 ||
		!slices.Equal(route.GetMessageQueues()[0].GetAcceptMessageTypes(), []v2.MessageType{v2.MessageType_PRIORITY}) {
		t.Fatalf("route: %v %v", route, err)
	}

	p := producer(t, sdkConfig(n, ""), []string{topic})
	var prios []int32
	for i := range 5 {
		prios = append(prios, 0, 1, 2, 3)
		prios = append(prios, int32(9+i)) // above the top queue: stored with the top one
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(prios), func(i, j int) { prios[i], prios[j] = prios[j], prios[i] })
	send := func(m *rmq.Message) error {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_, err := p.Send(sctx, m)
		return err
	}
	for i, prio := range prios {
		m := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("p%d-%d", prio, i))}
		if err := m.SetPriority(prio); err != nil {
			t.Fatal(err)
		}
		if err := send(m); err != nil {
			t.Fatalf("send priority %d: %v", prio, err)
		}
	}
	if err := send(&rmq.Message{Topic: topic, Body: []byte("no priority")}); err == nil {
		t.Fatal("a message without a priority was taken by the PRIORITY topic")
	}

	recs := storedRecords(t, n, topic, 4, len(prios)) // the consume-queue entries follow the answers
	stored := 0
	for q, rs := range recs {
		for _, r := range rs {
			v, _ := message.LookupProperty(r.Properties, message.PropPriority)
			prio, err := message.ParsePriority(v)
			if err != nil || min(prio, 3) != q {
				t.Fatalf("queue %d holds %q with PRIORITY %q", q, r.Body, v)
			}
			stored++
		}
	}
	if stored != len(prios) {
		t.Fatalf("%d stored, want %d", stored, len(prios))
	}

	cons := simpleConsumer(t, sdkConfig(n, group), topic, rmq.SUB_ALL)
	priorityOf := func(m *rmq.MessageView) int {
		b := string(m.GetBody())
		v, _ := strconv.Atoi(b[1:strings.IndexByte(b, '-')])
		return min(v, 3)
	}
	// The first receive takes one message, the top priority's; made
	// visible again at once (invisible 0), it comes back (attempt 2)
	// before anything of a lower priority: a retry keeps its priority.
	first := receiveOne(t, cons)
	if priorityOf(first) != 3 {
		t.Fatalf("first receive: %s", first.GetBody())
	}
	if err := cons.ChangeInvisibleDuration(first, 0); err != nil {
		t.Fatalf("change invisible duration: %v", err)
	}
	engine := n.Broker().Pipeline().Pop()
	waitFor(t, 10*time.Second, "the un-acked message visible again", func() bool { return engine.Inflight() == 0 })

	var order []int
	var got []*rmq.MessageView
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(prios) && time.Now().Before(deadline) {
		got = append(got, receiveUntil(t, cons, 1, 20*time.Second, 5*time.Second)...)
		for _, m := range got[len(order):] {
			order = append(order, priorityOf(m))
			actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := cons.Ack(actx, m); err != nil {
				t.Fatalf("ack %s: %v", m.GetBody(), err)
			}
			acancel()
		}
	}
	if len(got) != len(prios) {
		t.Fatalf("received %d of %d (%v)", len(got), len(prios), bodies(got))
	}
	if !slices.IsSortedFunc(order, func(a, b int) int { return b - a }) {
		t.Fatalf("delivered out of priority order: %v (%v)", order, bodies(got))
	}
	if string(got[0].GetBody()) != string(first.GetBody()) || got[0].GetDeliveryAttempt() != 2 {
		t.Fatalf("the retried top-priority message %s did not come first (attempt 2): %v", first.GetBody(), bodies(got))
	}
	t.Logf("%d messages of 4 priority levels delivered highest first: %v", len(order), order)
}

// receiveOne receives one message, invisible 10 s (the gRPC minimum).
func receiveOne(t *testing.T, c rmq.SimpleConsumer) *rmq.MessageView {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		msgs, err := c.Receive(ctx, 1, 10*time.Second)
		cancel()
		if err == nil && len(msgs) == 1 {
			return msgs[0]
		}
	}
	t.Fatal("no message received within 20 s")
	return nil
}
