package grpctest

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestSimpleConsumerSQL92 receives through a SQL92 filter on a user
// property: only the matching messages arrive.
func TestSimpleConsumerSQL92(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_sql")
	processtest.CreateTopic(t, n, topic, 2)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	c := simpleConsumer(t, sdkConfig(n, topic+"_cg"), topic, rmq.NewFilterExpressionWithType("a > 5 AND color = 'red'", rmq.SQL92))
	for i := 1; i <= 10; i++ {
		m := &rmq.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}
		m.AddProperty("a", strconv.Itoa(i))
		m.AddProperty("color", map[bool]string{true: "red", false: "blue"}[i%2 == 0])
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.Send(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	got := receiveUntil(t, c, 3, 10*time.Second, 15*time.Second)
	want := map[string]bool{"6": true, "8": true, "10": true}
	for _, m := range got {
		if !want[string(m.GetBody())] {
			t.Fatalf("the SQL92 filter let %q (a=%s color=%s) through", m.GetBody(), m.GetProperties()["a"], m.GetProperties()["color"])
		}
		delete(want, string(m.GetBody()))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Ack(ctx, m); err != nil {
			t.Fatalf("ack: %v", err)
		}
		cancel()
	}
	if len(want) != 0 {
		t.Fatalf("matching messages not received: %v", want)
	}
}

// TestSimpleConsumerDeadLetter: a group with retryMaxTimes 0 (one
// delivery) that never acks: after its invisible time the message is not
// offered again but stored in %DLQ%<group> with its message id.
func TestSimpleConsumerDeadLetter(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("waits out a 10 s invisible time")
	}
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_dlq")
	group := topic + "_cg"
	processtest.CreateTopic(t, n, topic, 1)
	g := meta.NewSubscriptionGroupConfig(group)
	g.RetryMaxTimes = 0
	body, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body)); r.Code != remoting.Success {
		t.Fatalf("create group: %d %s", r.Code, r.Remark)
	}
	p := producer(t, sdkConfig(n, ""), []string{topic})
	c := simpleConsumer(t, sdkConfig(n, group), topic, rmq.SUB_ALL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	sent, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte("poison")})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	got := receiveUntil(t, c, 1, 10*time.Second, 15*time.Second)
	if len(got) != 1 || got[0].GetDeliveryAttempt() != 1 {
		t.Fatalf("first receive: %d messages", len(got))
	}
	dlq := processtest.WaitQueue(t, n.BrokerAddr(), meta.DLQTopic(group), 0, 1, 20*time.Second)
	if len(dlq) != 1 {
		t.Fatalf("DLQ: %d records, want 1", len(dlq))
	}
	if again := receiveUntil(t, c, 1, 10*time.Second, 3*time.Second); len(again) != 0 {
		t.Fatalf("offered again (attempt %d) past the group's max attempts", again[0].GetDeliveryAttempt())
	}
	if id := message.DecodeProperties(dlq[0].Properties)[message.PropUniqKey]; id != sent[0].MessageID || string(dlq[0].Body) != "poison" {
		t.Fatalf("DLQ record id %q body %q, sent %q", id, dlq[0].Body, sent[0].MessageID)
	}
}
