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

// TestLiteAcksSurviveFailover: a group acks the first two of four lite
// messages on the master; the acks reach the replica in the lite ack
// journal (actors/broker liteack.go), so once the master is gone and the
// replica promoted, the group gets only the two it did not ack, in order,
// then what is sent to the new master.
func TestLiteAcksSurviveFailover(t *testing.T) {
	t.Parallel() // waits more than it computes
	if testing.Short() {
		t.Skip("controllers and a failover")
	}
	a, b := startPair(t)
	topic := processtest.Unique("lite_ackfail")
	group := topic + "_cg"
	if r := processtest.Invoke(t, a.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "attributes": "+message.type=LITE",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create LITE topic: %d %s", r.Code, r.Remark)
	}
	send := func(addr, body string) bool {
		t.Helper()
		r := processtest.Invoke(t, addr, processtest.SendRequest(topic, -1, []byte(body),
			map[string]string{message.PropLiteTopic: "x", message.PropUniqKey: processtest.Unique("uk")}))
		return r.Code == remoting.Success
	}
	for i := range 4 {
		if !send(a.BrokerAddr(), fmt.Sprintf("x-%d", i)) {
			t.Fatalf("send x-%d to the master refused", i)
		}
	}
	c := broker.Caller{Protocol: broker.GRPC, ClientID: "lite-ackfail@1"}
	sub := &broker.LiteSubscription{Action: broker.LiteCompleteAdd, Topic: topic, Group: group, Client: c.ClientID, Lites: []string{"x"}}
	receive := func(core *broker.Broker) broker.LiteDelivery {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := core.LiteReceive(ctx, c, &broker.LiteReceiveRequest{Group: group, Topic: topic, Client: c.ClientID,
			Max: 4, Invisible: 30 * time.Second, Poll: 3 * time.Second})
		if err != nil || len(got) != 1 {
			t.Fatalf("receive: %d deliveries, %v; want one", len(got), err)
		}
		return got[0]
	}
	ma := a.Broker().Core()
	if err := ma.SyncLiteSubscription(c, sub); err != nil {
		t.Fatalf("subscribe on the master: %v", err)
	}
	for i := range 2 {
		d := receive(ma)
		if want := fmt.Sprintf("x-%d", i); string(d.Record.Body) != want {
			t.Fatalf("master delivered %q, want %s", d.Record.Body, want)
		}
		if err := ma.LiteAck(c, group, d.Handle); err != nil {
			t.Fatalf("ack %s: %v", d.Record.Body, err)
		}
	}
	haWait(t, "the master to journal both acks", func() bool { return ma.LiteAcksJournaled() >= 2 })
	waitReplicated(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("stop the master: %v", err)
	}
	haWait(t, "replica promoted", func() bool {
		return strings.Contains(haGet(t, "http://"+b.MetricsAddr()+"/healthz"), "role: master broker_id=0")
	})
	haWait(t, "the promoted broker to take a send", func() bool { return send(b.BrokerAddr(), "x-4") })
	mb := b.Broker().Core()
	if held := mb.LiteHeld(topic, "x"); held != 3 {
		t.Fatalf("the new master holds %d messages of x; want 3 (x-2, x-3 not acked, x-4 new)", held)
	}
	if err := mb.SyncLiteSubscription(c, sub); err != nil {
		t.Fatalf("subscribe on the new master: %v", err)
	}
	for i := 2; i <= 4; i++ {
		d := receive(mb)
		if want := fmt.Sprintf("x-%d", i); string(d.Record.Body) != want || d.Attempt != 1 {
			t.Fatalf("new master delivered %q attempt %d, want %s attempt 1 (x-0 and x-1 were acked)", d.Record.Body, d.Attempt, want)
		}
		if err := mb.LiteAck(c, group, d.Handle); err != nil {
			t.Fatalf("ack %s on the new master: %v", d.Record.Body, err)
		}
	}
}
