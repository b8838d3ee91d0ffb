package process_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestPopJournalReplayStart: after 20 messages popped and acked and 5 more
// popped with one left in flight, a restart reads the journal from the
// stored replay start (the in-flight delivery's pop entry), not from its
// beginning, and still redelivers exactly the un-acked message, after its
// deadline, and nothing acked.
func TestPopJournalReplayStart(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir, Metrics: true})
	topic, group := processtest.Unique("popjs"), processtest.Unique("popjsg")
	processtest.CreateTopic(t, n, topic, 1)
	send := func(prefix string, k int) {
		for i := range k {
			mustOK(t, "send", processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(topic, 0, []byte(fmt.Sprintf("%s%02d", prefix, i)), nil)))
		}
	}
	popAll := func(k int, invisible int64) []popped {
		var got []popped
		for deadline := time.Now().Add(10 * time.Second); len(got) < k && time.Now().Before(deadline); {
			_, more := doPop(t, n.BrokerAddr(), popReq(group, topic, 0, invisible, 1000, "*"))
			got = append(got, more...)
		}
		if len(got) != k {
			t.Fatalf("popped %d of %d", len(got), k)
		}
		return got
	}
	send("old", 20)
	for _, m := range popAll(20, 60000) {
		mustOK(t, "ack", processtest.Invoke(t, n.BrokerAddr(), ackReq(group, topic, m)))
	}
	send("new", 5)
	const invisible = 3000
	// Taken before the pop is asked for: the broker's deadline counts from
	// its pop, which is later, so a redelivery less than invisible after
	// popAt is early for sure (taken after the answer, it need not be).
	popAt := time.Now()
	got := popAll(5, invisible)
	acked := map[string]bool{}
	for _, m := range got[1:] {
		mustOK(t, "ack", processtest.Invoke(t, n.BrokerAddr(), ackReq(group, topic, m)))
		acked[m.body] = true
	}
	// The replay start is computed every second and kept as the offset of
	// the journal's system group: wait until it has passed the 40 entries
	// of the first twenty pops and acks.
	haWait(t, "the journal's replay start stored past the acked entries", func() bool {
		resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
			"consumerGroup": pop.JournalGroup, "topic": pop.JournalTopic, "queueId": "0"}, nil))
		off, err := strconv.ParseInt(resp.Field("offset"), 10, 64)
		return resp.Code == remoting.Success && err == nil && off >= 40
	})
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	n = processtest.Start(t, processtest.Options{Dir: dir, Metrics: true})
	var back []popped
	for deadline := time.Now().Add(15 * time.Second); len(back) == 0 && time.Now().Before(deadline); {
		code, more := doPop(t, n.BrokerAddr(), popReq(group, topic, 0, 60000, 1000, "*"))
		if code != remoting.Success && code != 19 && code != 210 {
			t.Fatalf("pop after the restart: code %d", code)
		}
		back = append(back, more...)
	}
	if len(back) != 1 || back[0].body != got[0].body || back[0].reconsumeTimes != 1 {
		t.Fatalf("after the restart popped %+v, want only %s again (reconsumeTimes 1)", back, got[0].body)
	}
	if el := time.Since(popAt); el < invisible*time.Millisecond {
		t.Fatalf("%s back %v after its pop, before its %d ms deadline", got[0].body, el, invisible)
	}
	// The journal holds 20+20+5+4 entries; the replay starts at the pop
	// entry of the in-flight delivery, in the last pop's batch of five.
	replayed := scrape(t, n.MetricsAddr(), "wheelmq_pop_journal_replayed_entries")
	t.Logf("replayed %v journal entries", replayed)
	if replayed < 1 || replayed > 9 {
		t.Fatalf("replayed %v journal entries, want 1..9 (of 49)", replayed)
	}
	if _, more := doPop(t, n.BrokerAddr(), popReq(group, topic, 0, 60000, 0, "*")); len(more) != 0 {
		t.Fatalf("more after the redelivery: %+v", more)
	}
}
