package grpctest

import (
	"strconv"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// delivery is one call of a push consumer's listener.
type delivery struct {
	body    string
	tag     string
	attempt int32
	at      time.Time
}

// pushLog records a push consumer's deliveries.
type pushLog struct {
	mu   sync.Mutex
	seen []delivery
}

func (l *pushLog) add(d delivery) {
	l.mu.Lock()
	l.seen = append(l.seen, d)
	l.mu.Unlock()
}

func (l *pushLog) snapshot() []delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]delivery(nil), l.seen...)
}

// TestPushConsumer: a v5 PushConsumer with a tag filter gets only its tag;
// SUCCESS acks (nothing comes again); FAILURE makes the message come back
// (ChangeInvisibleDuration by the group's backoff, 1 s for attempt 1) with
// delivery attempt 2.
func TestPushConsumer(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_push")
	processtest.CreateTopic(t, n, topic, 2)
	group := topic + "_cg"
	log := &pushLog{}
	failed := map[string]bool{}
	var fmu sync.Mutex
	pc, err := rmq.NewPushConsumer(sdkConfig(n, group),
		rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.NewFilterExpression("keep")}),
		rmq.WithPushAwaitDuration(5*time.Second),
		rmq.WithPushConsumptionThreadCount(2),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
			tag := ""
			if tg := mv.GetTag(); tg != nil {
				tag = *tg
			}
			body := string(mv.GetBody())
			log.add(delivery{body: body, tag: tag, attempt: mv.GetDeliveryAttempt(), at: time.Now()})
			fmu.Lock()
			defer fmu.Unlock()
			if body == "keep-0" && !failed[body] {
				failed[body] = true
				return rmq.FAILURE
			}
			return rmq.SUCCESS
		}}))
	if err != nil {
		t.Fatalf("new push consumer: %v", err)
	}
	started := make(chan error, 1)
	go func() { started <- pc.Start() }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start push consumer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("push consumer Start did not return within 20 s")
	}
	// GracefulStop waits for the receive in flight: up to the server's
	// long polling (20 s) plus the request timeout.
	t.Cleanup(func() { _ = pc.GracefulStop() })

	p := producer(t, sdkConfig(n, ""), []string{topic})
	sendBodies(t, p, topic, "keep", 3)
	sendBodies(t, p, topic, "drop", 2)
	sent := time.Now()

	count := func(body string) (n int, attempts []int32) {
		for _, d := range log.snapshot() {
			if d.body == body {
				n++
				attempts = append(attempts, d.attempt)
			}
		}
		return n, attempts
	}
	waitFor(t, 30*time.Second, "keep-0 twice, keep-1 and keep-2 once", func() bool {
		n0, _ := count("keep-0")
		n1, _ := count("keep-1")
		n2, _ := count("keep-2")
		return n0 >= 2 && n1 >= 1 && n2 >= 1
	})
	t.Logf("all deliveries within %v of the last send", time.Since(sent).Round(time.Millisecond))
	// Acked messages must not come back: watch past a receive's long poll.
	time.Sleep(6 * time.Second)
	var first, second time.Time
	for _, d := range log.snapshot() {
		if d.tag != "keep" {
			t.Fatalf("the tag filter let %q (tag %q) through", d.body, d.tag)
		}
		if d.body == "keep-0" {
			if first.IsZero() {
				first = d.at
			} else if second.IsZero() {
				second = d.at
			}
		}
	}
	if n0, at := count("keep-0"); n0 != 2 || at[0] != 1 || at[1] != 2 {
		t.Fatalf("keep-0 (FAILURE once) delivered %d times with attempts %v, want 2 with [1 2]", n0, at)
	}
	for i := 1; i < 3; i++ {
		b := "keep-" + strconv.Itoa(i)
		if ni, at := count(b); ni != 1 || at[0] != 1 {
			t.Fatalf("%s (SUCCESS) delivered %d times with attempts %v, want once with attempt 1", b, ni, at)
		}
	}
	gap := second.Sub(first)
	t.Logf("keep-0 came back %v after its FAILURE", gap.Round(time.Millisecond))
	if gap < 900*time.Millisecond || gap > 15*time.Second {
		t.Fatalf("keep-0 came back %v after its FAILURE, want about the 1 s backoff", gap)
	}
}
