package grpctest

import (
	"context"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestProducerRecall: two timer messages sent through the Go v5 SDK, the
// first recalled with the recall handle of its send receipt: only the
// second is delivered, with its delivery time; a made-up handle is
// refused.
func TestProducerRecall(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_recall")
	processtest.CreateTopic(t, n, topic, 1)
	p := producer(t, sdkConfig(n, ""), []string{topic})
	c := simpleConsumer(t, sdkConfig(n, topic+"_cg"), topic, rmq.SUB_ALL)
	due := time.Now().Add(3 * time.Second)
	send := func(body string) *rmq.SendReceipt {
		m := &rmq.Message{Topic: topic, Body: []byte(body)}
		m.SetDelayTimestamp(due)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs, err := p.Send(ctx, m)
		if err != nil || len(rs) != 1 {
			t.Fatalf("send %s: %v", body, err)
		}
		return rs[0]
	}
	recalled, kept := send("recalled"), send("kept")
	if recalled.RecallHandle == "" {
		t.Fatal("a timer message's send receipt has no recall handle")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := p.Recall(ctx, topic, recalled.RecallHandle)
	if err != nil || id != recalled.MessageID {
		t.Fatalf("recall: id %q (sent %q), %v", id, recalled.MessageID, err)
	}
	if _, err := p.Recall(ctx, topic, "bm90IGEgaGFuZGxl"); err == nil {
		t.Fatal("a made-up recall handle was accepted")
	}
	got := receiveUntil(t, c, 1, 10*time.Second, 10*time.Second)
	got = append(got, receiveUntil(t, c, 1, 10*time.Second, 2*time.Second)...) // the recalled one is not
	if len(got) != 1 || got[0].GetMessageId() != kept.MessageID {
		var bodies []string
		for _, m := range got {
			bodies = append(bodies, string(m.GetBody()))
		}
		t.Fatalf("received %v, want only the message not recalled", bodies)
	}
	if ts := got[0].GetDeliveryTimestamp(); ts == nil || ts.UnixMilli() != due.UnixMilli() {
		t.Fatalf("delivery timestamp %v, want %v", ts, due)
	}
}
