package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// The pull/POP exclusion (actors/pop/mode) across a restart and a
// failover: the POP engine rebuilds what is in flight from its journal,
// and the modes set by SET_MESSAGE_REQUEST_MODE are persisted and
// replicated, so neither is forgotten.

// modeFixture is a topic of one queue with four messages, a group with
// all four popped (in flight for a minute) and a group set to POP by 401.
type modeFixture struct {
	topic, popped, set string
	got                []popped
}

// newModeFixture builds the fixture on n.
func newModeFixture(t *testing.T, n *process.Node) *modeFixture {
	t.Helper()
	f := &modeFixture{topic: processtest.Unique("rmode"), popped: processtest.Unique("rmodepop"), set: processtest.Unique("rmodeset")}
	mustOK(t, "create topic", processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": f.topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil)))
	putGroup(t, n, meta.NewSubscriptionGroupConfig(f.popped))
	putGroup(t, n, meta.NewSubscriptionGroupConfig(f.set))
	for i := range 4 {
		mustOK(t, "send", processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(f.topic, 0, fmt.Appendf(nil, "m%d", i), nil)))
	}
	for deadline := time.Now().Add(10 * time.Second); len(f.got) < 4 && time.Now().Before(deadline); {
		_, more := doPop(t, n.BrokerAddr(), popReq(f.popped, f.topic, 0, 60_000, 1000, "*"))
		f.got = append(f.got, more...)
	}
	if len(f.got) != 4 {
		t.Fatalf("popped %d of 4", len(f.got))
	}
	body, err := json.Marshal(map[string]any{"topic": f.topic, "consumerGroup": f.set, "mode": "POP", "popShareQueueNum": 0})
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, "401 POP", processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.SetMessageRequestMode, nil, body)))
	f.check(t, n, "before")
	return f
}

// check asserts that n refuses pulls of both groups for the right reason.
// A broker still reading its POP journal answers SYSTEM_BUSY, and one
// being promoted SERVICE_NOT_AVAILABLE: asked again until its deadline.
func (f *modeFixture) check(t *testing.T, n *process.Node, when string) {
	t.Helper()
	for _, c := range []struct{ group, remark string }{{f.set, "SET_MESSAGE_REQUEST_MODE"}, {f.popped, "in flight until"}} {
		var resp *remoting.Command
		for deadline := time.Now().Add(15 * time.Second); ; {
			resp = processtest.Invoke(t, n.BrokerAddr(), processtest.PullRequest(c.group, f.topic, 0, 0, 8))
			passing := resp.Code == remoting.SystemBusy || resp.Code == remoting.ServiceNotAvailable
			if !passing || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, c.remark) {
			t.Fatalf("%s: a pull of group %s: code %d %q, want NO_PERMISSION %q", when, c.group, resp.Code, resp.Remark, c.remark)
		}
	}
}

// ackAll acks the popped messages on n; then a pull of that group passes.
func (f *modeFixture) ackAll(t *testing.T, n *process.Node) {
	t.Helper()
	for _, m := range f.got {
		mustOK(t, "ack "+m.body, processtest.Invoke(t, n.BrokerAddr(), ackReq(f.popped, f.topic, m)))
	}
	if resp := processtest.Invoke(t, n.BrokerAddr(), processtest.PullRequest(f.popped, f.topic, 0, 0, 8)); resp.Code == remoting.NoPermission {
		t.Fatalf("a pull after every POP delivery was acked: %d %q", resp.Code, resp.Remark)
	}
}

// TestRequestModeAfterRestart: a broker stopped and started on its data
// directory still refuses pulls of a group with POP deliveries in flight
// and of a group set to POP; once the deliveries are acked, pulls pass.
func TestRequestModeAfterRestart(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	n1 := processtest.Start(t, processtest.Options{Dir: dir})
	f := newModeFixture(t, n1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n1.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	n2 := processtest.Start(t, processtest.Options{Dir: dir})
	f.check(t, n2, "after a restart")
	f.ackAll(t, n2)
	// A group nobody pops is pulled as before.
	if resp := processtest.Invoke(t, n2.BrokerAddr(), processtest.PullRequest(processtest.Unique("rmodefree"), f.topic, 0, 0, 8)); resp.Code != remoting.Success {
		t.Fatalf("a pull of a fresh group after the restart: %d %q", resp.Code, resp.Remark)
	}
}

// TestRequestModeAfterFailover: a group of two brokers in controller mode;
// on the master a group has POP deliveries in flight and another is set to
// POP; the master stops and the replica is promoted. The new master
// refuses pulls of both groups (the journal and the mode record came over
// with the CommitLog), and passes pulls once the deliveries are acked.
func TestRequestModeAfterFailover(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("controllers and a failover")
	}
	a, b := startPair(t)
	// A replica takes no 401: modes are set on the master.
	body, err := json.Marshal(map[string]any{"topic": "any", "consumerGroup": "any", "mode": "PULL", "popShareQueueNum": 0})
	if err != nil {
		t.Fatal(err)
	}
	if resp := processtest.Invoke(t, b.BrokerAddr(), remoting.NewRequest(remoting.SetMessageRequestMode, nil, body)); resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("401 on the replica: %d %q, want SERVICE_NOT_AVAILABLE", resp.Code, resp.Remark)
	}
	f := newModeFixture(t, a)
	// The master fails as soon as the 401 record is confirmed (so on the
	// replica's CommitLog), without waiting for the replica's metadata log
	// to apply it: the promoted broker must not serve pulls of the group
	// before it has (actors/pop ModesApplied).
	waitModeLogged(t, a, f.set, f.topic)
	waitReplicated(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("stop the master: %v", err)
	}
	haWait(t, "replica promoted", func() bool {
		return strings.Contains(haGet(t, "http://"+b.MetricsAddr()+"/healthz"), "role: master broker_id=0")
	})
	f.check(t, b, "after a failover")
	f.ackAll(t, b)
}

// waitModeLogged waits until n's metadata log holds a confirmed record
// setting (group, topic)'s request mode (the 401 is answered before the
// record is appended).
func waitModeLogged(t *testing.T, n *process.Node, group, topic string) {
	t.Helper()
	st := n.Broker().Pipeline().Store()
	haWait(t, "the 401 record in the master's metadata log", func() bool {
		q := st.Queues.Lookup(metarec.Topic, 0)
		if q == nil {
			return false
		}
		units, err := q.Read(q.MinOffset(), int(q.MaxOffset()-q.MinOffset()))
		if err != nil {
			t.Fatalf("read the metadata log's queue: %v", err)
		}
		for _, rec := range storage.ReadUnits(st.CommitLog, units) {
			r, err := metarec.FromMessage(rec)
			if err != nil || r.Kind != metarec.KindRequestModePut {
				continue
			}
			for _, m := range r.Modes {
				if m.ConsumerGroup == group && m.Topic == topic {
					return true
				}
			}
		}
		return false
	})
}
