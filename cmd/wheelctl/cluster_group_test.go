package main

// The cluster test's consumer group: two official Go push consumers,
// settled before messages flow, and the checks of what they received.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// group is a consumer group of two official Go push consumers.
type group struct {
	recs []*processtest.Received
}

// startGroup starts two official Go push consumers of topic in one group,
// given every name server, and waits until the group has split the queues:
// rounds of 8 probe messages (one per queue, round robin) until two
// rounds in a row each reach exactly one consumer, 4 to each. Starting
// consumers before messages flow keeps a rebalance from handing a
// half-consumed queue over (which RocketMQ answers with redelivery).
func startGroup(t *testing.T, ns []string, topic string, p *producer.Producer) *group {
	t.Helper()
	name := processtest.Unique("cg")
	resolver := consumer.WithNsResolver(primitive.NewPassthroughResolver(ns))
	processtest.QuietClient()
	if lvl := os.Getenv("WHEELMQ_TEST_CLIENT_LOG"); lvl != "" { // e.g. info: the Go client's rebalances
		rlog.SetLogLevel(lvl)
	}
	g := &group{}
	for range 2 {
		_, rec := processtest.PushConsumer(t, ns[0], name, topic, "*", resolver)
		g.recs = append(g.recs, rec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterWait)
	defer cancel()
	clean := 0
	for round := 0; clean < 2; round++ {
		if ctx.Err() != nil {
			t.Fatalf("the consumer group did not settle within %v", clusterWait)
		}
		var bodies []string
		for i := range 8 {
			body := fmt.Sprintf("settle-%d-%d", round, i)
			if _, err := p.Send(ctx, producer.NewMessage(topic, []byte(body))); err != nil {
				t.Fatalf("probe %s: %v", body, err)
			}
			bodies = append(bodies, body)
		}
		var per []int
		waitUntil(t, "probes of round "+strconv.Itoa(round)+" consumed", func() bool {
			per = g.count(bodies)
			return per[0]+per[1] >= len(bodies)
		})
		if per[0] == 4 && per[1] == 4 {
			clean++
		} else {
			clean = 0
		}
		t.Logf("settle round %d: deliveries per consumer %v", round, per)
	}
	return g
}

// count returns how many deliveries of bodies each consumer had.
func (g *group) count(bodies []string) []int {
	want := map[string]bool{}
	for _, b := range bodies {
		want[b] = true
	}
	out := make([]int, len(g.recs))
	for i, r := range g.recs {
		for _, m := range r.Snapshot() {
			if want[string(m.Body)] {
				out[i]++
			}
		}
	}
	return out
}

// groupDelivery is one message a consumer of the group received.
type groupDelivery struct {
	consumer int
	body     string
	pos      recordPos
}

// recordPos is where a message is stored.
type recordPos struct {
	broker string
	queue  int
	offset int64
}

// deliveries returns what the group received, without the settle probes.
func (g *group) deliveries() []groupDelivery {
	var out []groupDelivery
	for i, r := range g.recs {
		for _, m := range r.Snapshot() {
			if body := string(m.Body); !strings.HasPrefix(body, "settle-") {
				out = append(out, groupDelivery{i, body, recordPos{m.Queue.BrokerName, m.Queue.QueueId, m.QueueOffset}})
			}
		}
	}
	return out
}

// waitReceived waits until the group received every message l
// acknowledged, within limit.
func (g *group) waitReceived(t *testing.T, l *ledger, limit time.Duration) {
	t.Helper()
	l.mu.Lock()
	acked := maps.Clone(l.acked)
	l.mu.Unlock()
	start := time.Now()
	for {
		seen := map[string]bool{}
		for _, d := range g.deliveries() {
			seen[d.body] = true
		}
		missing := 0
		for b := range acked {
			if !seen[b] {
				missing++
			}
		}
		if missing == 0 {
			t.Logf("the group has all %d acknowledged messages, %v after the last send", len(acked),
				time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > limit {
			t.Fatalf("the group received %d of %d acknowledged messages within %v", len(acked)-missing, len(acked), limit)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// checkDeliveries checks what the group received: only messages a
// producer sent; a body stored twice only when a send attempt of it failed
// (a retry after a lost answer); every consumer got messages; and, with
// exactlyOnce, no stored record delivered twice. Without it a record may
// be delivered twice, but only to two different consumers: a restarted
// broker's consumer table is empty until each client's next heartbeat
// (the Go client sends them one client at a time, every 30 s and after its
// queues change), so a rebalance meanwhile works from a partial member
// list and can hand a queue to a second consumer, which starts from the
// broker's last persisted offset: RocketMQ's at-least-once across a
// rebalance.
func (g *group) checkDeliveries(t *testing.T, l *ledger, exactlyOnce bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	byPos := map[recordPos][]int{}
	stored := map[string]map[recordPos]bool{}
	perConsumer := make([]map[string]int, len(g.recs))
	for i := range perConsumer {
		perConsumer[i] = map[string]int{}
	}
	for _, d := range g.deliveries() {
		if _, ok := l.acked[d.body]; !ok && !l.tried[d.body] {
			t.Errorf("received a message nobody sent: %q", d.body)
		}
		byPos[d.pos] = append(byPos[d.pos], d.consumer)
		if stored[d.body] == nil {
			stored[d.body] = map[recordPos]bool{}
		}
		stored[d.body][d.pos] = true
		perConsumer[d.consumer][d.pos.broker]++
	}
	twice := 0
	for p, cs := range byPos {
		if len(cs) == 1 {
			continue
		}
		twice++
		if exactlyOnce || len(cs) > 2 || cs[0] == cs[1] {
			t.Errorf("record %+v delivered to consumers %v", p, cs)
		}
	}
	for body, at := range stored {
		if len(at) > 1 && !l.failed[body] {
			t.Errorf("%q stored %d times without a failed send attempt", body, len(at))
		}
	}
	for i, pc := range perConsumer {
		if len(pc) == 0 {
			t.Errorf("consumer %d received nothing: the group did not spread (%v)", i, perConsumer)
		}
	}
	t.Logf("received per consumer and broker: %v; %d records delivered twice (%d acknowledged, %d with a failed attempt)",
		perConsumer, twice, len(l.acked), len(l.failed))
}
