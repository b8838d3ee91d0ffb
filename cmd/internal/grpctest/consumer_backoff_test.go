package grpctest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestSimpleConsumerRedeliveryBacksOff: a v5 SimpleConsumer of a group
// whose retry policy is exponential 1.5 s (max 10 s) receives a message
// (invisible 10 s, the gateway's least) and does not ack it: the message
// comes back as delivery attempt 2 no earlier than 10 s + 1.5 s after the
// receive was sent (the policy's delay for attempt 1, after the deadline),
// and within 6 s of that.
func TestSimpleConsumerRedeliveryBacksOff(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("waits out a 10 s invisible time")
	}
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_backoff")
	group := topic + "_cg"
	processtest.CreateTopic(t, n, topic, 1)
	g := meta.NewSubscriptionGroupConfig(group)
	g.GroupRetryPolicy = json.RawMessage(`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1500,"max":10000,"multiplier":2}}`)
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
	_, err = p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte("later")})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	const invisible = 10 * time.Second
	var first []*rmq.MessageView
	var sent time.Time // before the receive that got delivery 1: its popTime is no earlier
	for deadline := time.Now().Add(15 * time.Second); len(first) == 0 && time.Now().Before(deadline); {
		sent = time.Now()
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		first, _ = c.Receive(rctx, 16, invisible) // nothing yet: MESSAGE_NOT_FOUND, try again
		rcancel()
	}
	if len(first) != 1 || first[0].GetDeliveryAttempt() != 1 {
		t.Fatalf("first receive: %d messages", len(first))
	}
	promised := invisible + 1500*time.Millisecond
	again := receiveUntil(t, c, 1, invisible, promised+6*time.Second)
	got := time.Since(sent)
	if len(again) != 1 || again[0].GetDeliveryAttempt() != 2 || string(again[0].GetBody()) != "later" {
		t.Fatalf("no redelivery within %v of the first receive (got %d)", got, len(again))
	}
	if got < promised {
		t.Fatalf("redelivered %v after the first receive was sent, before invisible %v + back-off 1.5 s", got, invisible)
	}
	t.Logf("redelivered %v after the first receive was sent (promised %v)", got, promised)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ack(ctx, again[0]); err != nil {
		t.Fatalf("ack: %v", err)
	}
}
