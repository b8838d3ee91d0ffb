package grpctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
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
