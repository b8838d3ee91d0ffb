package grpctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/litelog"
)

// TestLiteEvictAndReload: with --lite-resident-max 1, lite topics past the
// first go to the spill store (actors/broker liteevict.go); a subscription
// brings one back with its messages in order, a group's acks survive its
// eviction (the acked messages are not delivered again after the reload),
// and a message sent to an evicted lite topic lands after the ones it
// held.
func TestLiteEvictAndReload(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, func(c *pipeline.Config) { c.LiteResidentMax = 1 }, nil)
	core := n.Broker().Core()
	topic, group := processtest.Unique("grpc_lite_evict"), processtest.Unique("grpc_lite_evict_cg")
	createLiteTopic(t, n, topic, "")
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@liteevict"), 60*time.Second)
	defer cancel()
	liteTelemetry(t, c, ctx, group, topic)
	send := func(lite, body string) {
		t.Helper()
		l := lite
		r, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(topic, body,
			func(sp *v2.SystemProperties) { sp.LiteTopic, sp.MessageType = &l, v2.MessageType_LITE })}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("send %s: %v %v", body, r, err)
		}
	}
	sync := func(action v2.LiteSubscriptionAction, lite string) {
		t.Helper()
		resp, err := c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: action,
			Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: []string{lite}})
		if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("sync %v %s: %v %v", action, lite, resp, err)
		}
	}
	receive := func(want string) {
		t.Helper()
		msgs, err := liteReceive(ctx, c, group, topic)
		if err != nil || len(msgs) != 1 || string(msgs[0].GetBody()) != want || msgs[0].GetSystemProperties().GetDeliveryAttempt() != 1 {
			var got []string
			for _, m := range msgs {
				got = append(got, string(m.GetBody()))
			}
			t.Fatalf("receive: %v %v, want only %s (attempt 1)", got, err, want)
		}
		r, err := c.AckMessage(ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic},
			Entries: []*v2.AckMessageEntry{{MessageId: msgs[0].GetSystemProperties().GetMessageId(),
				ReceiptHandle: msgs[0].GetSystemProperties().GetReceiptHandle()}}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("ack %s: %v %v", want, r, err)
		}
	}
	const lites, each = 6, 3
	for j := range each {
		for i := range lites {
			send(fmt.Sprintf("e%d", i), fmt.Sprintf("e%d-%d", i, j))
		}
	}
	waitFor(t, 10*time.Second, "all but one lite topic evicted", func() bool {
		st := core.LiteStats()
		return st.Topics == 1 && st.Evicted == lites-1
	})
	if held := core.LiteHeld(topic, "e0"); held != 0 {
		t.Fatalf("evicted e0 holds %d in memory", held)
	}
	// A subscription reloads e0; two acked, then it is left and evicted again.
	sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "e0")
	receive("e0-0")
	receive("e0-1")
	sync(v2.LiteSubscriptionAction_PARTIAL_REMOVE, "e0")
	send("f", "f-0") // a newer lite topic: e0 is now the least recently written past the bound
	waitFor(t, 10*time.Second, "e0 evicted again", func() bool {
		return core.LiteStats().Topics == 1 && core.LiteHeld(topic, "e0") == 0 && core.LiteHeld(topic, "f") == 1
	})
	// A send to evicted e0 reloads it behind what it held.
	send("e0", "e0-3")
	waitFor(t, 10*time.Second, "e0 reloaded by the send", func() bool { return core.LiteHeld(topic, "e0") == 2 })
	sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "e0")
	receive("e0-2")
	receive("e0-3")
	sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "e3")
	for j := range each {
		receive(fmt.Sprintf("e3-%d", j))
	}
	if st := core.LiteStats(); st.Evictions < lites || st.Reloads < 3 {
		t.Fatalf("stats %+v: want at least %d evictions and 3 reloads", st, lites)
	}
}

// TestLiteCompactionKeepsEvicted: a lite log compaction while lite topics
// are evicted keeps their messages and group positions (read back from the
// spill store): after a restart (no bound) each evicted lite topic holds
// what it held, the one a group acked in part holds the rest, and the
// consumed lite topic nothing.
func TestLiteCompactionKeepsEvicted(t *testing.T) {
	withSSL(t, false)
	old := broker.LiteCompactBytes.Swap(4 << 10)
	defer broker.LiteCompactBytes.Store(old)
	dir := t.TempDir()
	opts := processtest.Options{Dir: dir, Mutate: func(c *pipeline.Config) { c.LiteResidentMax = 1 },
		MutateNode: func(c *process.Config) { c.GRPC.Listen = "127.0.0.1:0" }}
	n := processtest.Start(t, opts)
	core := n.Broker().Core()
	topic, group := processtest.Unique("grpc_lite_evcompact"), processtest.Unique("grpc_lite_evcompact_cg")
	createLiteTopic(t, n, topic, "")
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@liteevcompact"), 60*time.Second)
	defer cancel()
	liteTelemetry(t, c, ctx, group, topic)
	send := func(lite, body string) {
		t.Helper()
		l := lite
		r, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(topic, body,
			func(sp *v2.SystemProperties) { sp.LiteTopic, sp.MessageType = &l, v2.MessageType_LITE })}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("send %s: %v %v", body, r, err)
		}
	}
	sync := func(action v2.LiteSubscriptionAction, lite string) {
		t.Helper()
		resp, err := c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: action,
			Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: []string{lite}})
		if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("sync %v %s: %v %v", action, lite, resp, err)
		}
	}
	consume := func(want string) {
		t.Helper()
		msgs, err := liteReceive(ctx, c, group, topic)
		if err != nil || len(msgs) != 1 || string(msgs[0].GetBody()) != want {
			t.Fatalf("receive: %v %v, want %s", msgs, err, want)
		}
		r, err := c.AckMessage(ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic},
			Entries: []*v2.AckMessageEntry{{MessageId: msgs[0].GetSystemProperties().GetMessageId(),
				ReceiptHandle: msgs[0].GetSystemProperties().GetReceiptHandle()}}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("ack %s: %v %v", want, r, err)
		}
	}
	const ks = 20
	for i := range ks {
		send(fmt.Sprintf("k%d", i), fmt.Sprintf("k%d-0", i))
		send(fmt.Sprintf("k%d", i), fmt.Sprintf("k%d-1", i))
	}
	sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "k0")
	consume("k0-0")
	sync(v2.LiteSubscriptionAction_PARTIAL_REMOVE, "k0")
	sync(v2.LiteSubscriptionAction_PARTIAL_ADD, "c")
	const nc = 100
	for i := range nc {
		send("c", fmt.Sprintf("c-%d", i))
		consume(fmt.Sprintf("c-%d", i))
	}
	waitFor(t, 10*time.Second, "the k lite topics evicted", func() bool { return core.LiteStats().Evicted == ks })
	// Live: the k lite topics' messages but k0-0 (its only group consumed
	// it: trimmed, the position is the first held), no Ack.
	waitFor(t, 10*time.Second, "the lite log compacted", func() bool { m, a := liteLogCounts(dir); return m == 2*ks-1 && a == 0 })
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if err := n.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	opts.Mutate = nil // no bound: every lite topic resident after the replay
	n = processtest.Start(t, opts)
	core = n.Broker().Core()
	if held := core.LiteHeld(topic, "k0"); held != 1 {
		t.Fatalf("after the restart k0 holds %d, want 1 (k0-0 acked)", held)
	}
	for i := 1; i < ks; i++ {
		if held := core.LiteHeld(topic, fmt.Sprintf("k%d", i)); held != 2 {
			t.Fatalf("after the restart k%d holds %d, want 2", i, held)
		}
	}
	if held := core.LiteHeld(topic, "c"); held != 0 {
		t.Fatalf("after the restart c holds %d, want 0 (all consumed)", held)
	}
}

// TestLiteEvictedExpire: evicted lite topics expire at their TTL too (the
// lite writer's sweep of the spill store, lowered here to every 100 ms):
// with --lite-resident-max 1 and a TTL of 2 s, three of four lite topics
// are evicted, and all four are gone (an Expire record each in the lite
// log), never before the TTL since their last message.
func TestLiteEvictedExpire(t *testing.T) {
	withSSL(t, false)
	old := broker.LiteEvictedSweepEvery.Swap(int64(100 * time.Millisecond))
	defer broker.LiteEvictedSweepEvery.Store(old)
	const ttl = 2 * time.Second
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir, Mutate: func(c *pipeline.Config) { c.LiteResidentMax, c.LiteExpiration = 1, ttl },
		MutateNode: func(c *process.Config) { c.GRPC.Listen = "127.0.0.1:0" }})
	core := n.Broker().Core()
	topic := processtest.Unique("grpc_lite_evexpire")
	createLiteTopic(t, n, topic, "")
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@liteevexpire"), 30*time.Second)
	defer cancel()
	const lites = 4
	for i := range lites {
		l := fmt.Sprintf("x%d", i)
		r, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(topic, l+"-0",
			func(sp *v2.SystemProperties) { sp.LiteTopic, sp.MessageType = &l, v2.MessageType_LITE })}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("send %s: %v %v", l, r, err)
		}
	}
	lastSend := time.Now()
	waitFor(t, 10*time.Second, "three lite topics evicted", func() bool { return core.LiteStats().Evictions >= lites-1 })
	waitFor(t, 15*time.Second, "every lite topic expired", func() bool { st := core.LiteStats(); return st.Topics == 0 && st.Evicted == 0 })
	if since := time.Since(lastSend); since < ttl {
		t.Fatalf("the lite topics were gone %v after their last message, before their TTL %v", since, ttl)
	}
	waitFor(t, 10*time.Second, "an Expire record for each lite topic", func() bool {
		expired := map[string]bool{}
		_ = litelog.Read(broker.LiteDir(dir), func(r *litelog.Record) {
			if r.Kind == litelog.KindExpire && r.Parent == topic {
				expired[r.Lite] = true
			}
		})
		return len(expired) == lites
	})
}

// TestLiteIdleEvict: with --lite-idle-evict 500ms and no bound, a lite
// topic nobody subscribes to is evicted once idle that long (never
// before), one subscribed to stays in memory, and a send brings the
// evicted one back: a subscriber then gets both its messages, in order.
func TestLiteIdleEvict(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	const idle = 500 * time.Millisecond
	n := node(t, func(c *pipeline.Config) { c.LiteIdleEvict = idle }, nil)
	core := n.Broker().Core()
	topic, group := processtest.Unique("grpc_lite_idle"), processtest.Unique("grpc_lite_idle_cg")
	createLiteTopic(t, n, topic, "")
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@liteidle"), 30*time.Second)
	defer cancel()
	liteTelemetry(t, c, ctx, group, topic)
	resp, err := c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: v2.LiteSubscriptionAction_PARTIAL_ADD,
		Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: []string{"kept"}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("subscribe: %v %v", resp, err)
	}
	send := func(lite, body string) {
		t.Helper()
		l := lite
		r, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(topic, body,
			func(sp *v2.SystemProperties) { sp.LiteTopic, sp.MessageType = &l, v2.MessageType_LITE })}})
		if err != nil || r.GetStatus().GetCode() != v2.Code_OK {
			t.Fatalf("send %s: %v %v", body, r, err)
		}
	}
	send("idle", "idle-0")
	sent := time.Now()
	send("kept", "kept-0")
	waitFor(t, 10*time.Second, "the idle lite topic evicted", func() bool { return core.LiteStats().Evicted == 1 })
	if since := time.Since(sent); since < idle {
		t.Fatalf("evicted %v after its last message, before --lite-idle-evict %v", since, idle)
	}
	if held := core.LiteHeld(topic, "kept"); held != 1 {
		t.Fatalf("the subscribed lite topic holds %d in memory, want 1", held)
	}
	send("idle", "idle-1")
	waitFor(t, 10*time.Second, "the idle lite topic reloaded by the send", func() bool { return core.LiteStats().Reloads >= 1 })
	resp, err = c.SyncLiteSubscription(ctx, &v2.SyncLiteSubscriptionRequest{Action: v2.LiteSubscriptionAction_PARTIAL_ADD,
		Topic: &v2.Resource{Name: topic}, Group: &v2.Resource{Name: group}, LiteTopicSet: []string{"idle"}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("subscribe idle: %v %v", resp, err)
	}
	var idleGot []string
	for len(idleGot) < 2 {
		msgs, err := liteReceive(ctx, c, group, topic)
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		ack := &v2.AckMessageRequest{Group: &v2.Resource{Name: group}, Topic: &v2.Resource{Name: topic}}
		for _, m := range msgs {
			if m.GetSystemProperties().GetLiteTopic() == "idle" {
				idleGot = append(idleGot, string(m.GetBody()))
			}
			ack.Entries = append(ack.Entries, &v2.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(),
				ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
		}
		if len(ack.Entries) > 0 {
			if r, err := c.AckMessage(ctx, ack); err != nil || r.GetStatus().GetCode() != v2.Code_OK {
				t.Fatalf("ack: %v %v", r, err)
			}
		}
	}
	if idleGot[0] != "idle-0" || idleGot[1] != "idle-1" {
		t.Fatalf("the reloaded lite topic delivered %v, want [idle-0 idle-1]", idleGot)
	}
}
