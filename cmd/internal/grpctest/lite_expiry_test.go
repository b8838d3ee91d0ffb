package grpctest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/litelog"
)

// liteTelemetry opens a LitePushConsumer's Telemetry stream for clientID
// (settings answered) and returns the commands the gateway sends on it.
func liteTelemetry(t *testing.T, c v2.MessagingServiceClient, ctx context.Context, group, topic string) <-chan *v2.TelemetryCommand {
	t.Helper()
	tele, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatalf("telemetry: %v", err)
	}
	typ := v2.ClientType_LITE_PUSH_CONSUMER
	if err := tele.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: &typ, RequestTimeout: durationpb.New(3 * time.Second),
		PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: &v2.Resource{Name: group},
			Subscriptions: []*v2.SubscriptionEntry{{Topic: &v2.Resource{Name: topic},
				Expression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}}}}}}}}); err != nil {
		t.Fatalf("telemetry settings: %v", err)
	}
	first, err := tele.Recv()
	if err != nil || first.GetSettings().GetSubscription().GetLiteSubscriptionQuota() == 0 || !first.GetSettings().GetSubscription().GetFifo() {
		t.Fatalf("settings answer: %v %v", first, err)
	}
	out := make(chan *v2.TelemetryCommand, 16)
	go func() { // ends with the stream (ctx)
		defer close(out)
		for {
			cmd, err := tele.Recv()
			if err != nil {
				return
			}
			out <- cmd
		}
	}()
	return out
}

// awaitUnsubscribe waits for a NotifyUnsubscribeLiteCommand of lite.
func awaitUnsubscribe(t *testing.T, cmds <-chan *v2.TelemetryCommand, lite string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case cmd, ok := <-cmds:
			if !ok {
				t.Fatalf("telemetry ended before the notice for %s", lite)
			}
			if n := cmd.GetNotifyUnsubscribeLiteCommand(); n != nil {
				if n.GetLiteTopic() != lite {
					t.Fatalf("notice for %q, want %q", n.GetLiteTopic(), lite)
				}
				return
			}
		case <-deadline:
			t.Fatalf("no NotifyUnsubscribeLiteCommand for %s within %v", lite, d)
		}
	}
}

// TestLiteExpiryAndQuota: with --lite-expiration 1s, a lite topic with no
// new message for 1 s is deleted (its message not consumed with it) and
// the client subscribed to it gets NotifyUnsubscribeLiteCommand; never
// early: it lives at least its TTL after its last message. With
// --max-lite-subscriptions 2, a PARTIAL_ADD past the quota is refused
// (LITE_SUBSCRIPTION_QUOTA_EXCEEDED) and changes nothing; a COMPLETE_ADD
// of three keeps two and tells the client of the third. The TTL
// attribute lite.topic.expiration takes whole minutes in [-1, 43200].
func TestLiteExpiryAndQuota(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, func(c *pipeline.Config) { c.LiteExpiration, c.MaxLiteSubscriptions = time.Second, 2 }, nil)
	topic, group := processtest.Unique("grpc_lite_ttl"), processtest.Unique("grpc_lite_ttl_cg")
	createLiteTopic(t, n, topic, "")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": processtest.Unique("lite_bad_ttl"), "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
		"attributes": "+message.type=LITE,+lite.topic.expiration=43201",
	}, nil)); r.Code == remoting.Success {
		t.Fatal("lite.topic.expiration=43201 (over 30 days) was taken")
	}
	core := n.Broker().Core()
	c := rawClient(t, n.GRPCAddr())
	const client = "test@1@1@litettl"
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), client), 30*time.Second)
	defer cancel()
	cmds := liteTelemetry(t, c, ctx, group, topic)
	sync := func(action v2.LiteSubscriptionAction, lites ...string) *v2.Status {
		resp, err := c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: action,
			Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: lites})
		if err != nil {
			t.Fatalf("sync %v %v: %v", action, lites, err)
		}
		return resp.GetStatus()
	}

	// The quota.
	if st := sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "q1", "q2"); st.GetCode() != v2.Code_OK {
		t.Fatalf("add 2: %v", st)
	}
	if st := sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "q3"); st.GetCode() != v2.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED {
		t.Fatalf("add a third: %v", st)
	}
	if got := core.LiteSubscriptions(group, client); !slices.Equal(got, []string{"q1", "q2"}) {
		t.Fatalf("subscriptions after a refused add: %v", got)
	}
	if st := sync(v2.LiteSubscriptionAction_COMPLETE_ADD, "q1", "q2", "q3"); st.GetCode() != v2.Code_OK {
		t.Fatalf("complete add of 3: %v", st)
	}
	awaitUnsubscribe(t, cmds, "q3", 10*time.Second)
	if st := sync(v2.LiteSubscriptionAction_COMPLETE_REMOVE); st.GetCode() != v2.Code_OK {
		t.Fatalf("complete remove: %v", st)
	}
	if got := core.LiteSubscriptions(group, client); len(got) != 0 {
		t.Fatalf("subscriptions after COMPLETE_REMOVE: %v", got)
	}

	// The TTL.
	if st := sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "x"); st.GetCode() != v2.Code_OK {
		t.Fatalf("add x: %v", st)
	}
	p := producer(t, sdkConfig(n, ""), []string{topic})
	sent := time.Now() // before the send: the message is stored after this, its TTL counts from then
	sendLite(t, p, topic, "x", "x-0")
	if held := core.LiteHeld(topic, "x"); held != 1 {
		t.Fatalf("x holds %d", held)
	}
	awaitUnsubscribe(t, cmds, "x", 10*time.Second)
	if took := time.Since(sent); took < time.Second {
		t.Fatalf("x expired %v after its message, before its TTL of 1 s", took)
	}
	if held, subs := core.LiteHeld(topic, "x"), core.LiteSubscriptions(group, client); held != 0 || len(subs) != 0 {
		t.Fatalf("after expiry x holds %d and the client subscribes to %v", held, subs)
	}
}

// TestLiteOneInFlight: a lite topic has one message in flight per group:
// with two stored, a receive of up to 32 gets only the first; made visible
// again (ChangeInvisibleDuration 0, the SDK's SUSPEND) it comes back first,
// attempt 2, its old handle refused; once acked the second comes.
func TestLiteOneInFlight(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic, group := processtest.Unique("grpc_lite_one"), processtest.Unique("grpc_lite_one_cg")
	createLiteTopic(t, n, topic, "")
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@liteone"), 30*time.Second)
	defer cancel()
	liteTelemetry(t, c, ctx, group, topic)
	resp, err := c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: v2.LiteSubscriptionAction_PARTIAL_ADD,
		Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: []string{"r"}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("subscribe: %v %v", resp, err)
	}
	p := producer(t, sdkConfig(n, ""), []string{topic})
	sendLite(t, p, topic, "r", "r-0")
	sendLite(t, p, topic, "r", "r-1")
	receive := func(want string, attempt int32) *v2.Message {
		t.Helper()
		msgs, err := liteReceive(ctx, c, group, topic)
		if err != nil || len(msgs) != 1 || string(msgs[0].GetBody()) != want ||
			msgs[0].GetSystemProperties().GetDeliveryAttempt() != attempt || msgs[0].GetSystemProperties().GetLiteTopic() != "r" ||
			msgs[0].GetSystemProperties().GetMessageType() != v2.MessageType_LITE {
			t.Fatalf("receive: %v %v, want only %s attempt %d", msgs, err, want, attempt)
		}
		return msgs[0]
	}
	first := receive("r-0", 1)
	ch, err := c.ChangeInvisibleDuration(ctx, &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: group},
		Topic: &v2.Resource{Name: topic}, ReceiptHandle: first.GetSystemProperties().GetReceiptHandle(),
		InvisibleDuration: durationpb.New(0), MessageId: first.GetSystemProperties().GetMessageId()})
	if err != nil || ch.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("change invisible: %v %v", ch, err)
	}
	again := receive("r-0", 2)
	ack := func(m *v2.Message) v2.Code {
		r, err := c.AckMessage(ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic},
			Entries: []*v2.AckMessageEntry{{MessageId: m.GetSystemProperties().GetMessageId(), ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetEntries()[0].GetStatus().GetCode()
	}
	if code := ack(first); code != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("ack with the handle changed since: %v", code)
	}
	if code := ack(again); code != v2.Code_OK {
		t.Fatalf("ack: %v", code)
	}
	ackedLast := receive("r-1", 1)
	if code := ack(ackedLast); code != v2.Code_OK {
		t.Fatalf("ack r-1: %v", code)
	}
}

// TestLiteLogCompaction: with the compaction threshold lowered to 4 KiB,
// a lite topic of 100 messages consumed and acked leaves the lite log
// compacted to what is live (the other lite topic's 5 messages and a
// checkpoint); a restart on the same data directory delivers none of the
// consumed ones again and keeps the 5.
func TestLiteLogCompaction(t *testing.T) {
	withSSL(t, false)
	old := broker.LiteCompactBytes.Swap(4 << 10)
	defer broker.LiteCompactBytes.Store(old)
	dir := t.TempDir()
	opts := processtest.Options{Dir: dir, MutateNode: func(c *process.Config) { c.GRPC.Listen = "127.0.0.1:0" }}
	n := processtest.Start(t, opts)
	topic, group := processtest.Unique("grpc_lite_compact"), processtest.Unique("grpc_lite_compact_cg")
	createLiteTopic(t, n, topic, "")
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@litecompact"), 60*time.Second)
	defer cancel()
	liteTelemetry(t, c, ctx, group, topic)
	resp, err := c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: v2.LiteSubscriptionAction_PARTIAL_ADD,
		Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: []string{"c"}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("subscribe: %v %v", resp, err)
	}
	const nc, nd = 100, 5
	send := func(lite string, i int) {
		l := lite
		r, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(topic, fmt.Sprintf("%s-%d", lite, i),
			func(sp *v2.SystemProperties) { sp.LiteTopic, sp.MessageType = &l, v2.MessageType_LITE })}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("send %s-%d: %v %v", lite, i, r, err)
		}
	}
	for i := range nc {
		send("c", i)
		if i < nd {
			send("d", i)
		}
	}
	for i := range nc {
		msgs, err := liteReceive(ctx, c, group, topic)
		if err != nil || len(msgs) != 1 || string(msgs[0].GetBody()) != fmt.Sprintf("c-%d", i) {
			t.Fatalf("receive %d: %v %v", i, msgs, err)
		}
		r, err := c.AckMessage(ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic},
			Entries: []*v2.AckMessageEntry{{MessageId: msgs[0].GetSystemProperties().GetMessageId(),
				ReceiptHandle: msgs[0].GetSystemProperties().GetReceiptHandle()}}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("ack %d: %v %v", i, r, err)
		}
	}
	waitFor(t, 10*time.Second, "the lite log compacted", func() bool { m, a := liteLogCounts(dir); return m == nd && a == 0 })
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if err := n.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	n = processtest.Start(t, opts)
	core := n.Broker().Core()
	if c, d := core.LiteHeld(topic, "c"), core.LiteHeld(topic, "d"); c != 0 || d != nd {
		t.Fatalf("after the restart c holds %d (want 0) and d %d (want %d)", c, d, nd)
	}
}

// liteLogCounts counts the Message and Ack records of the lite log in
// the broker's data directory dir (what a compaction keeps).
func liteLogCounts(dir string) (msgs, acks int) {
	_ = litelog.Read(broker.LiteDir(dir), func(r *litelog.Record) {
		switch r.Kind {
		case litelog.KindMessage:
			msgs++
		case litelog.KindAck:
			acks++
		}
	})
	return msgs, acks
}
