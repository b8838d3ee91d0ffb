package grpctest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestSimpleConsumerFIFO: a FIFO topic (message.type=FIFO, one queue, so
// message groups A and B share it) read by an orderly group through the v5
// SDK. The route accepts FIFO only and the consumer's settings say fifo;
// each receive gives at most one message per group, in send order; while
// A's head stays un-acked, B's messages all flow; then A's come in order
// as each is acked. A NORMAL message to the topic is refused.
func TestSimpleConsumerFIFO(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic, group := processtest.Unique("grpc_fifo_pop"), processtest.Unique("grpc_fifo_cg")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=FIFO",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create FIFO topic: %d %s", r.Code, r.Remark)
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil,
		[]byte(`{"groupName":"`+group+`","consumeMessageOrderly":true,"consumeEnable":true,"retryMaxTimes":16,"retryQueueNums":1}`))); r.Code != remoting.Success {
		t.Fatalf("create orderly group: %d %s", r.Code, r.Remark)
	}

	// The route accepts FIFO only.
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@fifo"), 20*time.Second)
	defer cancel()
	route, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	if err != nil || len(route.GetMessageQueues()) == 0 ||
		!slices.Equal(route.GetMessageQueues()[0].GetAcceptMessageTypes(), []v2.MessageType{v2.MessageType_FIFO}) {
		t.Fatalf("route: %v %v", route, err)
	}

	p := producer(t, sdkConfig(n, ""), []string{topic})
	const perGroup = 4
	for i := range perGroup {
		for _, g := range []string{"A", "B"} {
			m := &rmq.Message{Topic: topic, Body: []byte(g + strconv.Itoa(i))}
			m.SetMessageGroup(g)
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := p.Send(sctx, m)
			scancel()
			if err != nil {
				t.Fatalf("send %s%d: %v", g, i, err)
			}
		}
	}
	// A NORMAL message on the FIFO topic: the SDK (validate_message_type)
	// or the broker refuses it.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = p.Send(sctx, &rmq.Message{Topic: topic, Body: []byte("plain")})
	scancel()
	if err == nil {
		t.Fatal("a NORMAL message was accepted by a FIFO topic")
	}
	// The server side check, past the SDK's (a raw client).
	resp, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{{
		Topic: &v2.Resource{Name: topic}, Body: []byte("plain"),
		SystemProperties: &v2.SystemProperties{MessageId: "01ABCDEF0123456789ABCDEF0123456789", MessageType: v2.MessageType_NORMAL,
			BodyEncoding: v2.Encoding_IDENTITY},
	}}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Fatalf("raw NORMAL send to a FIFO topic: %v %v", resp.GetStatus(), err)
	}

	cons := simpleConsumer(t, sdkConfig(n, group), topic, rmq.SUB_ALL)
	receive := func(want int) []*rmq.MessageView {
		t.Helper()
		got := receiveUntil(t, cons, want, 30*time.Second, 15*time.Second)
		seen := map[string]bool{}
		for _, m := range got {
			g := m.GetMessageGroup()
			if g == nil || seen[*g] {
				t.Fatalf("received %d messages, two of group %v (or none): %s", len(got), g, bodies(got))
			}
			seen[*g] = true
		}
		return got
	}
	ack := func(m *rmq.MessageView) {
		t.Helper()
		actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer acancel()
		if err := cons.Ack(actx, m); err != nil {
			t.Fatalf("ack %s: %v", m.GetBody(), err)
		}
	}

	first := receive(2)
	if bodies(first) != "A0 B0" {
		t.Fatalf("first receive: %s, want A0 B0", bodies(first))
	}
	var a0 *rmq.MessageView
	for _, m := range first {
		if *m.GetMessageGroup() == "A" {
			a0 = m
		} else {
			ack(m)
		}
	}
	// A0 stays in flight: B goes on, in order, alone.
	for i := 1; i < perGroup; i++ {
		got := receive(1)
		if bodies(got) != "B"+strconv.Itoa(i) {
			t.Fatalf("with A0 in flight: received %s, want B%d", bodies(got), i)
		}
		ack(got[0])
	}
	// Then A, in order, one at a time.
	ack(a0)
	for i := 1; i < perGroup; i++ {
		got := receive(1)
		if bodies(got) != "A"+strconv.Itoa(i) {
			t.Fatalf("after acking A%d: received %s, want A%d", i-1, bodies(got), i)
		}
		ack(got[0])
	}
}

// bodies lists the views' bodies, sorted, space separated.
func bodies(ms []*rmq.MessageView) string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.GetBody()))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
