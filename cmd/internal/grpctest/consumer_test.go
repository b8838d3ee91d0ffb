package grpctest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// simpleConsumer starts a v5 SimpleConsumer of group on topic with filter.
func simpleConsumer(t *testing.T, cfg *rmq.Config, topic string, filter *rmq.FilterExpression) rmq.SimpleConsumer {
	t.Helper()
	c, err := rmq.NewSimpleConsumer(cfg, rmq.WithSimpleAwaitDuration(3*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: filter}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start simple consumer: %v", err)
	}
	t.Cleanup(func() { _ = c.GracefulStop() })
	return c
}

// receiveUntil receives (invisible d) until want messages came or the
// deadline passed; nothing received is not an error (MESSAGE_NOT_FOUND).
func receiveUntil(t *testing.T, c rmq.SimpleConsumer, want int, d, within time.Duration) []*rmq.MessageView {
	t.Helper()
	var got []*rmq.MessageView
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		msgs, err := c.Receive(ctx, 16, d)
		cancel()
		var st *rmq.ErrRpcStatus
		if err != nil && !(errors.As(err, &st) && st.Code == 40401) {
			t.Logf("receive: %v", err)
		}
		got = append(got, msgs...)
	}
	return got
}

func sendBodies(t *testing.T, p rmq.Producer, topic, tag string, n int) {
	t.Helper()
	for i := range n {
		m := &rmq.Message{Topic: topic, Body: []byte(tag + "-" + strconv.Itoa(i))}
		m.SetTag(tag)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.Send(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %s %d: %v", tag, i, err)
		}
	}
}

// TestSimpleConsumer: receive with a tag filter and ack (nothing comes
// again); a message left un-acked comes back after its invisible time with
// delivery attempt 2; a changed invisible time gives a new handle and the
// old one is refused (SQL92 and the DLQ: consumer_dlq_test.go).
func TestSimpleConsumer(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_simple")
	processtest.CreateTopic(t, n, topic, 2)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	group := topic + "_cg"
	c := simpleConsumer(t, sdkConfig(n, group), topic, rmq.NewFilterExpression("keep"))
	sendBodies(t, p, topic, "keep", 4)
	sendBodies(t, p, topic, "drop", 3)

	got := receiveUntil(t, c, 4, 10*time.Second, 20*time.Second)
	if len(got) != 4 {
		t.Fatalf("received %d of 4 'keep' messages", len(got))
	}
	var lapsed *rmq.MessageView
	for i, m := range got {
		if tag := m.GetTag(); tag == nil || *tag != "keep" {
			t.Fatalf("the tag filter let %q through", m.GetBody())
		}
		if m.GetDeliveryAttempt() != 1 {
			t.Fatalf("first delivery attempt %d", m.GetDeliveryAttempt())
		}
		if i == 0 {
			lapsed = m // not acked: it must come back
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Ack(ctx, m); err != nil {
			t.Fatalf("ack: %v", err)
		}
		cancel()
	}
	start := time.Now()
	again := receiveUntil(t, c, 1, 10*time.Second, 25*time.Second)
	if len(again) != 1 || string(again[0].GetBody()) != string(lapsed.GetBody()) {
		t.Fatalf("after the invisible time: %d messages (want the un-acked %q again)", len(again), lapsed.GetBody())
	}
	if again[0].GetDeliveryAttempt() != 2 {
		t.Fatalf("redelivery attempt %d, want 2", again[0].GetDeliveryAttempt())
	}
	t.Logf("the un-acked message came back %v after the second receive began", time.Since(start))

	// Change invisible duration: a new handle; the old one no longer acks.
	old := again[0].GetReceiptHandle()
	if err := c.ChangeInvisibleDuration(again[0], 30*time.Second); err != nil {
		t.Fatalf("change invisible duration: %v", err)
	}
	if again[0].GetReceiptHandle() == old {
		t.Fatal("ChangeInvisibleDuration kept the old receipt handle")
	}
	raw := rawClient(t, n.GRPCAddr())
	if st := rawAck(t, raw, group, topic, again[0].GetMessageId(), old); st == v2.Code_OK {
		t.Fatal("the replaced receipt handle still acked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ack(ctx, again[0]); err != nil {
		t.Fatalf("ack with the new handle: %v", err)
	}
	if extra := receiveUntil(t, c, 1, 10*time.Second, 4*time.Second); len(extra) != 0 {
		t.Fatalf("%d messages delivered after everything was acked (first %q)", len(extra), extra[0].GetBody())
	}
}

// rawAck acks one handle with a raw gRPC client and returns the status code.
func rawAck(t *testing.T, c v2.MessagingServiceClient, group, topic, msgID, handle string) v2.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@rawack"), 5*time.Second)
	defer cancel()
	resp, err := c.AckMessage(ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic},
		Entries: []*v2.AckMessageEntry{{MessageId: msgID, ReceiptHandle: handle}}})
	if err != nil {
		t.Fatalf("raw ack: %v", err)
	}
	if len(resp.GetEntries()) == 1 && resp.GetEntries()[0].GetStatus().GetCode() != v2.Code_OK {
		return resp.GetEntries()[0].GetStatus().GetCode()
	}
	return resp.GetStatus().GetCode()
}
