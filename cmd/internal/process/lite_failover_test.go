package process_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestLiteAfterFailover: lite messages the master stored reach the replica
// through the replication stream, which does not index them; when the
// replica is promoted, the first lite call indexes them before anything
// else (actors/broker litepromote.go), so the new master holds every lite
// topic's messages, in their order, ahead of a message sent after the
// promotion, and delivers the oldest first.
func TestLiteAfterFailover(t *testing.T) {
	t.Parallel() // waits more than it computes
	if testing.Short() {
		t.Skip("controllers and a failover")
	}
	a, b := startPair(t)
	topic := processtest.Unique("lite_failover")
	if r := processtest.Invoke(t, a.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "attributes": "+message.type=LITE",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create LITE topic: %d %s", r.Code, r.Remark)
	}
	send := func(addr, lite string, i int) {
		t.Helper()
		r := processtest.Invoke(t, addr, processtest.SendRequest(topic, -1, []byte(fmt.Sprintf("%s-%d", lite, i)),
			map[string]string{message.PropLiteTopic: lite, message.PropUniqKey: processtest.Unique("uk")}))
		if r.Code != remoting.Success {
			t.Fatalf("send %s-%d to %s: %d %s", lite, i, addr, r.Code, r.Remark)
		}
	}
	for i := range 4 {
		send(a.BrokerAddr(), "x", i)
		send(a.BrokerAddr(), "y", i)
	}
	waitReplicated(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("stop the master: %v", err)
	}
	haWait(t, "replica promoted", func() bool {
		return strings.Contains(haGet(t, "http://"+b.MetricsAddr()+"/healthz"), "role: master broker_id=0")
	})
	core := b.Broker().Core()
	haWait(t, "the promoted broker to take a send", func() bool {
		r := processtest.Invoke(t, b.BrokerAddr(), processtest.SendRequest(topic, -1, []byte("x-4"),
			map[string]string{message.PropLiteTopic: "x", message.PropUniqKey: processtest.Unique("uk")}))
		return r.Code == remoting.Success
	})
	if x, y := core.LiteHeld(topic, "x"), core.LiteHeld(topic, "y"); x != 5 || y != 4 {
		t.Fatalf("after the promotion the new master holds x %d, y %d; want 5 (4 replicated + 1 new) and 4", x, y)
	}
	c := broker.Caller{Protocol: broker.GRPC, ClientID: "lite-failover@1"}
	if err := core.SyncLiteSubscription(c, &broker.LiteSubscription{Action: broker.LiteCompleteAdd, Topic: topic,
		Group: topic + "_cg", Client: c.ClientID, Lites: []string{"x"}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	got, err := core.LiteReceive(rctx, c, &broker.LiteReceiveRequest{Group: topic + "_cg", Topic: topic, Client: c.ClientID,
		Max: 1, Invisible: 30 * time.Second, Poll: 2 * time.Second})
	if err != nil || len(got) != 1 || string(got[0].Record.Body) != "x-0" {
		var bodies []string
		for _, d := range got {
			bodies = append(bodies, string(d.Record.Body))
		}
		t.Fatalf("first delivery of lite topic x on the new master: %v %v, want x-0", bodies, err)
	}
}
