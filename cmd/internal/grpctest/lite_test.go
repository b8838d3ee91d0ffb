package grpctest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// liteLog collects a LitePushConsumer's deliveries.
type liteLog struct {
	mu  sync.Mutex
	got []string // "<lite>/<body>"
}

func (l *liteLog) add(s string) {
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
}

func (l *liteLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// of lists the bodies delivered from lite topic lite, in order.
func (l *liteLog) of(lite string) []string {
	var out []string
	for _, s := range l.snapshot() {
		if k, body, _ := strings.Cut(s, "/"); k == lite {
			out = append(out, body)
		}
	}
	return out
}

// createLiteTopic creates a LITE topic with attributes extra over
// remoting and waits for its route.
func createLiteTopic(t *testing.T, n *process.Node, topic, extra string) {
	t.Helper()
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=LITE" + extra,
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create LITE topic: %d %s", r.Code, r.Remark)
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
}

// litePushConsumer starts a LitePushConsumer of group bound to topic,
// logging every delivery (and acking it). The caller stops it
// (stopConsumers).
func litePushConsumer(t *testing.T, n *process.Node, group, topic string, log *liteLog) rmq.LitePushConsumer {
	t.Helper()
	pc, err := rmq.NewLitePushConsumer(sdkConfig(n, group), rmq.NewLitePushConsumerConfig(topic, 10*time.Second),
		rmq.WithPushAwaitDuration(5*time.Second),
		rmq.WithPushConsumptionThreadCount(2),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
			log.add(mv.GetLiteTopic() + "/" + string(mv.GetBody()))
			return rmq.SUCCESS
		}}))
	if err != nil {
		t.Fatalf("new lite push consumer: %v", err)
	}
	started := make(chan error, 1)
	go func() { started <- pc.Start() }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start lite push consumer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("lite push consumer Start did not return within 20 s")
	}
	return pc
}

// stopConsumers stops the consumers side by side at the test's end (the
// SDK's GracefulStop waits out its long polling and request timeout).
func stopConsumers(t *testing.T, cs ...rmq.LitePushConsumer) {
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() { _ = c.GracefulStop() })
		}
		wg.Wait()
	})
}

// sendLite sends body to topic's lite topic lite.
func sendLite(t *testing.T, p rmq.Producer, topic, lite, body string) {
	t.Helper()
	m := &rmq.Message{Topic: topic, Body: []byte(body)}
	m.SetLiteTopic(lite)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, m); err != nil {
		t.Fatalf("send %s to lite topic %s: %v", body, lite, err)
	}
}

// TestLitePushConsumer (issue 28 item 2, RocketMQ 5.5's lite topics): a
// LITE topic's route accepts LITE only; the Go v5 SDK sends messages of
// two lite topics interleaved; a LitePushConsumer subscribed to one gets
// exactly that lite topic's messages, in order, while the other's wait
// for the consumer subscribed to it; after UnSubscribeLite a new message
// is not delivered until the client subscribes again. A lite message to a
// NORMAL topic, and a message without a lite topic to the LITE topic, are
// refused and nothing is stored.
func TestLitePushConsumer(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic, normal, group := processtest.Unique("grpc_lite"), processtest.Unique("grpc_lite_normal"), processtest.Unique("grpc_lite_cg")
	createLiteTopic(t, n, topic, "")
	if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": normal, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=NORMAL",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create NORMAL topic: %d %s", r.Code, r.Remark)
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), normal)
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), "test@1@1@lite"), 20*time.Second)
	defer cancel()
	route, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	if err != nil || len(route.GetMessageQueues()) == 0 ||
		!slices.Equal(route.GetMessageQueues()[0].GetAcceptMessageTypes(), []v2.MessageType{v2.MessageType_LITE}) {
		t.Fatalf("route: %v %v", route, err)
	}

	core := n.Broker().Core()
	var logA, logB liteLog
	ca := litePushConsumer(t, n, group, topic, &logA)
	if err := ca.SubscribeLite("a"); err != nil {
		t.Fatalf("subscribe a: %v", err)
	}
	p := producer(t, sdkConfig(n, ""), []string{topic, normal})
	const nA, nB = 12, 6
	var wantA, wantB []string
	for i := range nA {
		wantA = append(wantA, fmt.Sprintf("a-%d", i))
		sendLite(t, p, topic, "a", wantA[i])
		if i < nB {
			wantB = append(wantB, fmt.Sprintf("b-%d", i))
			sendLite(t, p, topic, "b", wantB[i])
		}
	}
	waitFor(t, 30*time.Second, "the consumer of a to get a's 12 messages", func() bool { return len(logA.of("a")) >= nA })
	if got := logA.of("a"); !slices.Equal(got, wantA) {
		t.Fatalf("lite topic a delivered %v, want %v", got, wantA)
	}
	if got := logA.snapshot(); len(got) != nA {
		t.Fatalf("the consumer of a got %d deliveries (%v), want exactly a's %d", len(got), got, nA)
	}
	if held := core.LiteHeld(topic, "b"); held != nB {
		t.Fatalf("lite topic b holds %d messages, want %d (nobody subscribes to it)", held, nB)
	}

	cb := litePushConsumer(t, n, group, topic, &logB)
	stopConsumers(t, ca, cb)
	if err := cb.SubscribeLite("b"); err != nil {
		t.Fatalf("subscribe b: %v", err)
	}
	waitFor(t, 30*time.Second, "the consumer of b to get b's messages", func() bool { return len(logB.of("b")) >= nB })
	if got := logB.of("b"); !slices.Equal(got, wantB) || len(logB.snapshot()) != nB {
		t.Fatalf("the consumer of b got %v, want %v", logB.snapshot(), wantB)
	}
	waitFor(t, 10*time.Second, "every delivery acked", func() bool {
		st := core.LiteStats()
		return st.InFlight == 0 && core.LiteHeld(topic, "a") == 0 && core.LiteHeld(topic, "b") == 0
	})

	// Unsubscribed, the client gets nothing new of a; subscribed again,
	// it does.
	if err := ca.UnSubscribeLite("a"); err != nil {
		t.Fatalf("unsubscribe a: %v", err)
	}
	sendLite(t, p, topic, "a", "a-late")
	waitFor(t, 10*time.Second, "a-late stored in lite topic a", func() bool { return core.LiteHeld(topic, "a") == 1 })
	time.Sleep(1500 * time.Millisecond) // watching for a delivery that must not happen
	if got := logA.of("a"); len(got) != nA {
		t.Fatalf("delivered after UnSubscribeLite: %v", got[nA:])
	}
	if err := ca.SubscribeLite("a"); err != nil {
		t.Fatalf("subscribe a again: %v", err)
	}
	waitFor(t, 30*time.Second, "a-late after subscribing again", func() bool { return len(logA.of("a")) == nA+1 })
	if got := logA.of("a"); got[nA] != "a-late" {
		t.Fatalf("got %v", got)
	}

	// Refusals: nothing stored.
	before := core.LiteStats()
	m := &rmq.Message{Topic: normal, Body: []byte("lite to normal")}
	m.SetLiteTopic("a")
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if _, err := p.Send(sctx, m); err == nil {
		t.Fatal("a lite message was taken by a NORMAL topic")
	} else {
		t.Logf("lite message to a NORMAL topic: %v", err)
	}
	if _, err := p.Send(sctx, &rmq.Message{Topic: topic, Body: []byte("no lite topic")}); err == nil {
		t.Fatal("a message without a lite topic was taken by the LITE topic")
	} else {
		t.Logf("message without a lite topic to the LITE topic: %v", err)
	}
	if after := core.LiteStats(); after.Messages != before.Messages {
		t.Fatalf("a refused send changed the lite state: %+v -> %+v", before, after)
	}
	if recs := allRecords(t, n, normal, 2); len(recs[0])+len(recs[1]) != 0 {
		t.Fatalf("the NORMAL topic stored %d records", len(recs[0])+len(recs[1]))
	}
}
