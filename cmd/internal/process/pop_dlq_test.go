package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestPopDeadLetterAfterMaxAttempts: a group with retryMaxTimes 1 gets two
// deliveries of a message it never acks (each expiry on the timer wheel,
// never before its deadline); after the second expires the message is in
// the group's %DLQ% topic with its id and RETRY_TOPIC, is not popped
// again, and /metrics counts it.
func TestPopDeadLetterAfterMaxAttempts(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{Dir: t.TempDir(), Metrics: true})
	addr := n.BrokerAddr()
	topic, group := processtest.Unique("popdlq"), processtest.Unique("popdlqg")
	processtest.CreateTopic(t, n, topic, 1)
	g := meta.NewSubscriptionGroupConfig(group)
	g.RetryMaxTimes = 1
	putGroup(t, n, g)
	p := processtest.Producer(t, n.NamesrvAddr())
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("doomed")))
	if err != nil {
		t.Fatal(err)
	}
	const invisible = 400
	var lastPop time.Time
	for attempt := int32(1); attempt <= 2; attempt++ {
		var got []popped
		var popAt time.Time
		for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
			popAt = time.Now()
			_, got = doPop(t, addr, popReq(group, topic, -1, invisible, 1500, "*"))
		}
		if len(got) != 1 || got[0].body != "doomed" || got[0].reconsumeTimes != attempt-1 {
			t.Fatalf("delivery %d: %+v", attempt, got)
		}
		if attempt > 1 && time.Since(lastPop) < invisible*time.Millisecond {
			t.Fatalf("delivery %d came %v after the previous pop, before its %d ms deadline", attempt, time.Since(lastPop), invisible)
		}
		lastPop = popAt
	}
	// Past the second deadline nothing is popped: the message is in the DLQ.
	time.Sleep(time.Until(lastPop.Add(invisible*time.Millisecond + 300*time.Millisecond)))
	if code, got := doPop(t, addr, popReq(group, topic, -1, invisible, 1000, "*")); len(got) != 0 {
		t.Fatalf("popped after the max attempts (code %d): %+v", code, got)
	}
	dlq := processtest.WaitQueue(t, addr, meta.DLQTopic(group), 0, 1, 10*time.Second)
	if len(dlq) != 1 || string(dlq[0].Body) != "doomed" {
		t.Fatalf("DLQ holds %d records, want the message", len(dlq))
	}
	props := message.DecodeProperties(dlq[0].Properties)
	if props[message.PropUniqKey] != res.MsgID || props[message.PropRetryTopic] != topic || dlq[0].ReconsumeTimes != 2 {
		t.Fatalf("DLQ record: uniq %q (sent %q), RETRY_TOPIC %q, reconsumeTimes %d", props[message.PropUniqKey], res.MsgID,
			props[message.PropRetryTopic], dlq[0].ReconsumeTimes)
	}
	for name, want := range map[string]float64{
		"wheelmq_pop_dead_lettered_total": 1, "wheelmq_pop_expiries_total": 2, "wheelmq_pop_redelivery_late_seconds_count": 1,
		"wheelmq_pop_inflight": 0,
	} {
		if got := scrape(t, n.MetricsAddr(), name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
