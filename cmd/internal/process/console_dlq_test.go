package process_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// failingConsumer starts an official Go client push consumer of topic in
// group that fails every message (maxReconsumeTimes 1, retry after 1 s:
// the second failure sends it to %DLQ%<group>) until heal is set, and
// records every delivery. The group's retry topic is made first, so the
// retry is taken up at once (retry_test.go).
func failingConsumer(t *testing.T, n *process.Node, group, topic string, heal *atomic.Bool) *processtest.Received {
	t.Helper()
	processtest.CreateTopic(t, n, meta.RetryTopic(group), 1)
	rec := &processtest.Received{}
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{n.NamesrvAddr()})),
		consumer.WithGroupName(group), consumer.WithInstance(processtest.Unique("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithMaxReconsumeTimes(1))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			rec.Add(msgs...)
			if heal.Load() {
				return consumer.ConsumeSuccess, nil
			}
			cc, _ := primitive.GetConcurrentlyCtx(ctx)
			cc.DelayLevelWhenNextConsume = 1
			return consumer.ConsumeRetryLater, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return rec
}

// waitDeadLetters waits until the console lists n messages in group's DLQ.
func waitDeadLetters(t *testing.T, cb console.Backend, group string, n int64) {
	t.Helper()
	ctx := context.Background()
	waitUntil(t, 30*time.Second, func() bool {
		qs, err := cb.DeadLetterQueues(ctx, console.Credentials{})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Group == group && q.Messages >= n {
				return true
			}
		}
		return false
	})
}

// TestConsoleDeadLettersResendAndTestSend: messages an official Go
// consumer keeps failing reach %DLQ%<group>; the console lists that DLQ
// with its count and each message's original topic, keys and reconsume
// count; a resend to the retry topic and one to the original topic each
// come back to the consumer (its reconsume count from 0) while the DLQ
// keeps the message and the resends are recorded; a test send reaches the
// consumer with its tags and keys, a delivery time makes it a timer, and a
// send the broker refuses says why.
func TestConsoleDeadLettersResendAndTestSend(t *testing.T) {
	t.Parallel() // waits more than it computes
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	cb := process.ConsoleOf(n)
	ctx := context.Background()
	topic, group := processtest.Unique("dlqc"), processtest.Unique("dlqcg")
	processtest.CreateTopic(t, n, topic, 1)
	var heal atomic.Bool
	rec := failingConsumer(t, n, group, topic, &heal)
	p := processtest.Producer(t, n.NamesrvAddr())
	for _, k := range []string{"key-a", "key-b"} {
		m := primitive.NewMessage(topic, []byte("doomed "+k))
		m.WithKeys([]string{k})
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	waitDeadLetters(t, cb, group, 2)
	heal.Store(true)
	dlq := meta.DLQTopic(group)
	dls, err := cb.DeadLetters(ctx, console.Credentials{}, dlq, -1, 10)
	if err != nil || len(dls) != 2 {
		t.Fatalf("dead letters: %d, %v", len(dls), err)
	}
	for _, d := range dls {
		if d.OriginTopic != topic || !strings.HasPrefix(d.Keys, "key-") || d.ReconsumeTimes < 1 || d.Preview != "doomed "+d.Keys || d.MsgID == "" {
			t.Fatalf("dead letter %+v", d)
		}
	}
	if dls[0].Offset != 1 || dls[1].Offset != 0 {
		t.Fatalf("not newest first: offsets %d, %d", dls[0].Offset, dls[1].Offset)
	}
	before := rec.Len()
	for i, to := range []string{console.ResendToRetry, console.ResendToOrigin} {
		d := dls[i]
		res, err := cb.Resend(ctx, console.Credentials{}, console.ResendRequest{Topic: dlq, Queue: d.Queue, Offset: d.Offset, To: to})
		if err != nil {
			t.Fatalf("resend to %s: %v", to, err)
		}
		want := map[string]string{console.ResendToRetry: meta.RetryTopic(group), console.ResendToOrigin: topic}[to]
		if res.To != want || res.MsgID != d.MsgID || res.OffsetMsgID == "" {
			t.Fatalf("resend to %s: %+v", to, res)
		}
		if !rec.WaitUntil(func(ms []*primitive.MessageExt) bool { return len(ms) > before+i }, 20*time.Second) {
			t.Fatalf("the message resent to %s did not come back", want)
		}
		got := rec.Snapshot()[before+i]
		if got.Topic != topic || string(got.Body) != "doomed "+d.Keys || got.ReconsumeTimes != 0 || got.MsgId != d.MsgID {
			t.Fatalf("resent to %s, received: topic %s body %q reconsume %d id %s (want %s)", want, got.Topic, got.Body,
				got.ReconsumeTimes, got.MsgId, d.MsgID)
		}
	}
	// The DLQ keeps both; the resends are recorded and counted per message.
	dls, err = cb.DeadLetters(ctx, console.Credentials{}, dlq, -1, 10)
	if err != nil || len(dls) != 2 || dls[0].Resent != 1 || dls[1].Resent != 1 {
		t.Fatalf("after the resends: %+v, %v", dls, err)
	}
	if rs := cb.Resends(dlq); len(rs) != 2 || rs[0].To != topic || rs[1].To != meta.RetryTopic(group) || rs[0].Who != "anonymous" {
		t.Fatalf("resends recorded: %+v", rs)
	}
	if _, err := cb.Resend(ctx, console.Credentials{}, console.ResendRequest{Topic: dlq, Offset: 7, To: console.ResendToRetry}); err == nil {
		t.Fatal("a resend of an offset the DLQ does not hold succeeded")
	}

	// A test send, then one with a delivery time.
	before = rec.Len()
	sent, err := cb.TestSend(ctx, console.Credentials{}, console.TestMessage{Topic: topic, Body: "from the console", Tags: "T1", Keys: "k1 k2"})
	if err != nil || sent.MsgID == "" {
		t.Fatalf("test send: %+v, %v", sent, err)
	}
	due := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	timed, err := cb.TestSend(ctx, console.Credentials{}, console.TestMessage{Topic: topic, Body: "later", DeliverAt: due})
	if err != nil {
		t.Fatalf("timed test send: %v", err)
	}
	if !rec.WaitUntil(func(ms []*primitive.MessageExt) bool { return len(ms) >= before+2 }, 20*time.Second) {
		t.Fatal("the test messages did not arrive")
	}
	arrived := time.Now()
	ms := rec.Snapshot()[before:]
	if m := ms[0]; m.MsgId != sent.MsgID || string(m.Body) != "from the console" || m.GetTags() != "T1" || m.GetKeys() != "k1 k2" {
		t.Fatalf("test message received: id %s body %q tags %q keys %q", m.MsgId, m.Body, m.GetTags(), m.GetKeys())
	}
	if m := ms[1]; m.MsgId != timed.MsgID || string(m.Body) != "later" || arrived.Before(due) {
		t.Fatalf("timed test message: id %s body %q, arrived %v before its time %v", m.MsgId, m.Body, arrived, due)
	}
	if _, err := cb.TestSend(ctx, console.Credentials{}, console.TestMessage{Topic: "RMQ_SYS_TRANS_HALF_TOPIC", Body: "x"}); err == nil ||
		!strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a test send to a system topic: %v", err)
	}
}
