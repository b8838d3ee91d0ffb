package process_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestPopRedeliveryFollowsGroupRetryPolicy: a group with the retry policy
// customized 300 ms, 600 ms and retryMaxTimes 2 pops (over remoting,
// POP_MESSAGE with a 200 ms invisible time) a message it never acks.
// Delivery 2 is popped no earlier than 200 + 300 ms after delivery 1's
// popTime and delivery 3 no earlier than 200 + 600 ms after delivery 2's
// (the broker's own popTimes: never early), each within 3 s of its time;
// after the third deadline the message is in %DLQ%<group> (no back-off
// after the last attempt) and /metrics counts two back-offs.
func TestPopRedeliveryFollowsGroupRetryPolicy(t *testing.T) {
	t.Parallel() // waits more than it computes
	n := processtest.Start(t, processtest.Options{Dir: t.TempDir(), Metrics: true})
	addr := n.BrokerAddr()
	topic, group := processtest.Unique("popbackoff"), processtest.Unique("popbackoffg")
	processtest.CreateTopic(t, n, topic, 1)
	g := meta.NewSubscriptionGroupConfig(group)
	g.RetryMaxTimes = 2
	g.GroupRetryPolicy = json.RawMessage(`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[300,600]}}`)
	putGroup(t, n, g)
	p := processtest.Producer(t, n.NamesrvAddr())
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("slow"))); err != nil {
		t.Fatal(err)
	}
	const invisible = 200
	backoff := []int64{300, 600} // after delivery 1, 2
	var prevPop int64            // the previous delivery's popTime (broker clock, ms)
	var prevAnswered time.Time
	for attempt := int32(1); attempt <= 3; attempt++ {
		var got []popped
		for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
			_, got = doPop(t, addr, popReq(group, topic, -1, invisible, 1000, "*"))
		}
		answered := time.Now()
		if len(got) != 1 || got[0].body != "slow" || got[0].reconsumeTimes != attempt-1 {
			t.Fatalf("delivery %d: %+v", attempt, got)
		}
		h, err := pop.ParseHandle(got[0].ck)
		if err != nil {
			t.Fatal(err)
		}
		if attempt > 1 {
			want := invisible + backoff[attempt-2]
			if gap := h.PopTime - prevPop; gap < want {
				t.Fatalf("delivery %d popped %d ms after delivery %d, before its %d ms (invisible %d + back-off %d)",
					attempt, gap, attempt-1, want, invisible, backoff[attempt-2])
			}
			if late := answered.Sub(prevAnswered) - time.Duration(want)*time.Millisecond; late > 3*time.Second {
				t.Fatalf("delivery %d came %v after its time", attempt, late)
			}
			t.Logf("delivery %d: %d ms after delivery %d's popTime (promised %d)", attempt, h.PopTime-prevPop, attempt-1, want)
		}
		prevPop, prevAnswered = h.PopTime, answered
	}
	dlq := processtest.WaitQueue(t, addr, meta.DLQTopic(group), 0, 1, 10*time.Second)
	if len(dlq) != 1 || string(dlq[0].Body) != "slow" || dlq[0].ReconsumeTimes != 3 {
		t.Fatalf("DLQ: %d records (reconsumeTimes %d)", len(dlq), dlq[0].ReconsumeTimes)
	}
	if props := message.DecodeProperties(dlq[0].Properties); props[message.PropRetryTopic] != topic {
		t.Fatalf("DLQ record RETRY_TOPIC %q", props[message.PropRetryTopic])
	}
	if stored := dlq[0].StoreTimestamp; stored < prevPop+invisible {
		t.Fatalf("dead-lettered %d ms after the last pop, before its %d ms deadline", stored-prevPop, invisible)
	}
	if code, got := doPop(t, addr, popReq(group, topic, -1, invisible, 0, "*")); len(got) != 0 {
		t.Fatalf("popped after the dead-letter queue (code %d): %+v", code, got)
	}
	for name, want := range map[string]float64{
		"wheelmq_pop_backed_off_total": 2, "wheelmq_pop_expiries_total": 3, "wheelmq_pop_dead_lettered_total": 1,
	} {
		if got := scrape(t, n.MetricsAddr(), name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
