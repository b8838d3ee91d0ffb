package grpctest

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestInteropRemotingToV5 sends a timer message with the official remoting
// Go client (tag, keys, user properties, a delivery time) and receives it
// with a v5 SimpleConsumer: the same message id, tag, keys, user
// properties (and nothing else among them) and delivery timestamp.
func TestInteropRemotingToV5(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("interop_r2v")
	processtest.CreateTopic(t, n, topic, 2)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	c := simpleConsumer(t, sdkConfig(n, topic+"_cg"), topic, rmq.NewFilterExpression("tagR"))

	p := processtest.Producer(t, n.NamesrvAddr())
	due := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	m := primitive.NewMessage(topic, []byte("from remoting"))
	m.WithTag("tagR")
	m.WithKeys([]string{"kA", "kB"})
	m.WithProperty("color", "green")
	m.WithProperty("size", "42")
	m.WithDelayTimestamp(due)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	res, err := p.SendSync(ctx, m)
	cancel()
	if err != nil {
		t.Fatalf("remoting send: %v", err)
	}
	if res.MsgID == "" {
		t.Fatalf("send result without a message id: %v", res)
	}

	got := receiveUntil(t, c, 1, 10*time.Second, 20*time.Second)
	if len(got) != 1 {
		t.Fatalf("v5 consumer received %d messages, want 1", len(got))
	}
	mv := got[0]
	at := time.Now()
	if at.Before(due) {
		t.Fatalf("timer message received %s before its delivery time", due.Sub(at))
	}
	if mv.GetMessageId() != res.MsgID {
		t.Fatalf("message id %q, the remoting producer's is %q", mv.GetMessageId(), res.MsgID)
	}
	if string(mv.GetBody()) != "from remoting" {
		t.Fatalf("body %q", mv.GetBody())
	}
	if tag := mv.GetTag(); tag == nil || *tag != "tagR" {
		t.Fatalf("tag %v, want tagR", tag)
	}
	if keys := mv.GetKeys(); !slices.Equal(keys, []string{"kA", "kB"}) {
		t.Fatalf("keys %v, want [kA kB]", keys)
	}
	if props := mv.GetProperties(); !maps.Equal(props, map[string]string{"color": "green", "size": "42"}) {
		t.Fatalf("user properties %v, want exactly color=green size=42", props)
	}
	if ts := mv.GetDeliveryTimestamp(); ts == nil || !ts.Equal(due) {
		t.Fatalf("delivery timestamp %v, want %v", ts, due)
	}
	if mv.GetDeliveryAttempt() != 1 {
		t.Fatalf("delivery attempt %d, want 1", mv.GetDeliveryAttempt())
	}
	ackCtx, ackCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ackCancel()
	if err := c.Ack(ackCtx, mv); err != nil {
		t.Fatalf("ack: %v", err)
	}
}

// TestInteropV5ToRemoting sends a delayed message with the v5 SDK producer
// (tag, keys, user properties) and receives it with the official remoting
// push consumer: the same message id, tags, keys and user properties, not
// before its delivery time.
func TestInteropV5ToRemoting(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("interop_v2r")
	processtest.CreateTopic(t, n, topic, 2)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "tagV")

	p := producer(t, sdkConfig(n, ""), []string{topic})
	due := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	m := &rmq.Message{Topic: topic, Body: []byte("from v5")}
	m.SetTag("tagV")
	m.SetKeys("k1", "k2")
	m.AddProperty("color", "red")
	m.AddProperty("weight", "7")
	m.SetDelayTimestamp(due)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rs, err := p.Send(ctx, m)
	cancel()
	if err != nil {
		t.Fatalf("v5 send: %v", err)
	}
	if len(rs) != 1 || rs[0].MessageID == "" {
		t.Fatalf("send receipts %+v", rs)
	}
	if !rec.WaitFor(1, 40*time.Second) {
		t.Fatal("the remoting push consumer received nothing within 40 s")
	}
	ms := rec.Snapshot()
	got := ms[0]
	if len(ms) != 1 {
		t.Fatalf("received %d messages, want 1", len(ms))
	}
	if got.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex) != rs[0].MessageID || got.MsgId != rs[0].MessageID {
		t.Fatalf("message id %q (UNIQ_KEY %q), the v5 producer's is %q", got.MsgId,
			got.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex), rs[0].MessageID)
	}
	if string(got.Body) != "from v5" || got.GetTags() != "tagV" || got.GetKeys() != "k1 k2" {
		t.Fatalf("body %q tags %q keys %q", got.Body, got.GetTags(), got.GetKeys())
	}
	if got.GetProperty("color") != "red" || got.GetProperty("weight") != "7" {
		t.Fatalf("user properties lost: %v", got.GetProperties())
	}
	if v := got.GetProperty(primitive.PropertyTimerDeliverMS); v != strconv.FormatInt(due.UnixMilli(), 10) {
		t.Fatalf("TIMER_DELIVER_MS %q, want %d", v, due.UnixMilli())
	}
	if now := time.Now(); now.Before(due) {
		t.Fatalf("delivered %s before its due time", due.Sub(now))
	}
}
