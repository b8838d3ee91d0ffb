package process_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestPopStateSurvivesFailover: a group of two brokers in controller mode;
// ten messages popped on the master, five acked; the master stops and the
// replica is promoted. Popping on the new master gives back exactly the
// five un-acked ones (attempt 2, not before their deadline) and none of
// the acked ones: the journal came over with the CommitLog and the new
// master read it when it was promoted.
func TestPopStateSurvivesFailover(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("controllers and a failover")
	}
	a, b := startPair(t)
	topic, group := processtest.Unique("popfo"), processtest.Unique("popfog")
	mustOK(t, "create topic", processtest.Invoke(t, a.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil)))
	for i := range 10 {
		mustOK(t, "send", processtest.Invoke(t, a.BrokerAddr(), processtest.SendRequest(topic, 0, []byte(fmt.Sprintf("m%d", i)), nil)))
	}
	const invisible = 5000
	var got []popped
	for deadline := time.Now().Add(10 * time.Second); len(got) < 10 && time.Now().Before(deadline); {
		_, more := doPop(t, a.BrokerAddr(), popReq(group, topic, 0, invisible, 1000, "*"))
		got = append(got, more...)
	}
	popped := time.Now()
	if len(got) != 10 {
		t.Fatalf("popped %d of 10 on the master", len(got))
	}
	acked := map[string]bool{}
	for i, m := range got {
		if i%2 == 0 {
			mustOK(t, "ack "+m.body, processtest.Invoke(t, a.BrokerAddr(), ackReq(group, topic, m)))
			acked[m.body] = true
		}
	}
	// The group runs with one in-sync replica required (the master), so
	// the pops' and acks' journal records are acknowledged before the
	// replica holds them: the claim is that what the replica holds carries
	// the POP state over, so the master stops once its whole log is there.
	waitReplicated(t, a, b)
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Stop(stopCtx); err != nil {
		t.Fatalf("stop the master: %v", err)
	}
	haWait(t, "replica promoted", func() bool {
		return strings.Contains(haGet(t, "http://"+b.MetricsAddr()+"/healthz"), "role: master broker_id=0")
	})
	back := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(back) < 5 && time.Now().Before(deadline); {
		code, more := doPop(t, b.BrokerAddr(), popReq(group, topic, 0, 60000, 1000, "*"))
		if code != remoting.Success && code != 19 && code != 210 {
			time.Sleep(100 * time.Millisecond) // the new master is still reading the journal
			continue
		}
		for _, m := range more {
			if acked[m.body] {
				t.Fatalf("acked %s delivered again by the new master", m.body)
			}
			if el := time.Since(popped); el < invisible*time.Millisecond-500*time.Millisecond {
				t.Fatalf("%s back %v after its pop, before its %d ms deadline", m.body, el, invisible)
			}
			if m.reconsumeTimes != 1 {
				t.Fatalf("%s back with reconsumeTimes %d, want 1", m.body, m.reconsumeTimes)
			}
			back[m.body] = true
		}
	}
	if len(back) != 5 {
		t.Fatalf("%d of 5 un-acked messages came back on the new master: %v", len(back), back)
	}
}

// waitReplicated waits until replica's CommitLog ends where master's does
// (both read at one moment).
func waitReplicated(t *testing.T, master, replica *process.Node) {
	t.Helper()
	ml, rl := master.Broker().Pipeline().Store().CommitLog, replica.Broker().Pipeline().Store().CommitLog
	haWait(t, "the replica to hold the master's whole CommitLog", func() bool {
		return rl.MaxOffset() == ml.MaxOffset()
	})
}
