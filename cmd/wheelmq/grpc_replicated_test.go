package main

// A v5 producer and a v5 SimpleConsumer on a replicated group of three,
// each through a replica's endpoint, across a SIGKILL of the master.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestGRPCReplicatedGroupFailover: operations.md's group of three
// (--replication controller, --min-in-sync-replicas 2, --flush sync); a
// v5 producer given one replica's endpoint sends to the master (its route
// points there), and a v5 SimpleConsumer given the other replica's
// endpoint receives and acks; the master is SIGKILLed; the sends go on to
// the new master once the SDK reads the route again (every 30 s, see
// TestGRPCClusterThroughOneEndpoint), each acknowledged at once; every
// acknowledged message is on the new master, and the consumer received
// every one of them (at least once) within 10 s of both the new master
// being in its SDK's routes and the last send.
func TestGRPCReplicatedGroupFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	v5Setup()
	began := time.Now()
	phase := func(what string) { t.Logf("%6.2fs %s", time.Since(began).Seconds(), what) }
	nsAddrs, brokers := startExampleGroup(t)
	bd := waitGroupReady(t, nsAddrs[0])
	masterAddr, masterEP := bd.BrokerAddrs[0], bd.GRPCEndpoints[0]
	var replicaEPs, replicaMetrics []string // the producer's, then the consumer's
	for id, ep := range bd.GRPCEndpoints {
		for _, m := range brokers {
			if id != 0 && m.listen == bd.BrokerAddrs[id] {
				replicaEPs, replicaMetrics = append(replicaEPs, ep), append(replicaMetrics, m.p.metrics)
			}
		}
	}
	if len(replicaMetrics) != 2 {
		t.Fatalf("replicas %v of %v", replicaEPs, bd.BrokerAddrs)
	}
	replicaEP := replicaEPs[0]
	topic := processtest.Unique("failover")
	const queues = 4
	createTopicAt(t, masterAddr, topic, queues)
	waitRoute(t, replicaEP, topic, 10*time.Second, func(qs []*v2.MessageQueue) bool {
		eps, _ := routeEndpoints(qs)
		return len(qs) == queues && eps["broker-a"] == masterEP
	})
	phase("group up, the replica's route points at the master")

	p, err := rmq.NewProducer(&rmq.Config{Endpoint: replicaEP, Credentials: &credentials.SessionCredentials{}},
		rmq.WithTopics(topic), rmq.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	cons := newFailoverConsumer(t, replicaEPs[1], topic+"-cg", topic)
	// Both Starts wait for their settings; together, so that the SDKs'
	// 30 s route refreshes, which the test waits for, fall close.
	started := make(chan error, 2)
	go func() { started <- p.Start() }()      // ends when Start returns
	go func() { started <- cons.c.Start() }() // ends when Start returns
	for range 2 {
		select {
		case err := <-started:
			if err != nil {
				t.Fatalf("start the producer or the SimpleConsumer: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the producer's or the SimpleConsumer's Start did not return within 20 s")
		}
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	cons.run(t)
	phase("producer and SimpleConsumer started")

	var acked []string
	ackedBy := map[string][]string{}
	send := func(i int) error {
		body := fmt.Sprintf("f-%04d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rs, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(body)})
		cancel()
		if err != nil {
			return err
		}
		eps, _ := routeEndpoints([]*v2.MessageQueue{{Broker: &v2.Broker{Name: "x", Endpoints: rs[0].Endpoints}}})
		ackedBy[eps["x"]] = append(ackedBy[eps["x"]], body)
		acked = append(acked, body)
		return nil
	}
	const before, after = 50, 40
	i := 0
	for ; i < before; i++ {
		if err := send(i); err != nil {
			t.Fatalf("message %d before the kill: %v", i, err)
		}
	}
	if len(ackedBy) != 1 || len(ackedBy[masterEP]) != before {
		t.Fatalf("before the kill, acknowledged by %v, want the master %s only", ackedBy, masterEP)
	}
	cons.waitReceived(t, acked[:before/2], time.Now().Add(10*time.Second), "before the kill")
	killed := time.Now()
	killMember(t, brokers, masterAddr)
	phase("master killed")
	// The consumer's receive in flight at the kill meets the dead master;
	// then it waits, as the producer does, for its SDK's route refresh
	// (fc.pause says why).
	cons.pause(t)
	phase("SimpleConsumer paused after the receive in flight at the kill")
	bd2 := waitGroup(t, nsAddrs[1], 30*time.Second, func(b namesrv.BrokerData) bool {
		return b.BrokerAddrs[0] != "" && b.BrokerAddrs[0] != masterAddr && b.GRPCEndpoints[0] != "" && b.GRPCEndpoints[0] != masterEP
	})
	newAddr, newEP := bd2.BrokerAddrs[0], bd2.GRPCEndpoints[0]
	waitRoute(t, replicaEP, topic, 10*time.Second, func(qs []*v2.MessageQueue) bool {
		eps, _ := routeEndpoints(qs)
		return len(qs) == queues && eps["broker-a"] == newEP
	})
	waitRoute(t, replicaEPs[1], topic, 10*time.Second, func(qs []*v2.MessageQueue) bool {
		eps, _ := routeEndpoints(qs)
		return len(qs) == queues && eps["broker-a"] == newEP
	})
	phase("new master " + newEP + " in both replicas' routes")
	// The SDKs send and receive at the dead master until they read the
	// route again (every 30 s): the test waits for those reads at their
	// access points, sending and receiving nothing meanwhile (each call to
	// the dead endpoint holds the SDK's connection table for a 5 s dial).
	refreshed := waitRouteRefreshes(t, replicaMetrics, []float64{routeQueries(t, replicaMetrics[0]), routeQueries(t, replicaMetrics[1])},
		100*time.Second) // a refresh that waits behind a dial of the dead endpoint fails; the next is 30 s later
	phase(fmt.Sprintf("the SDKs read the route again: the producer's %.2fs, the consumer's %.2fs",
		refreshed[0].Sub(began).Seconds(), refreshed[1].Sub(began).Seconds()))
	cons.resumeLoop()
	for end := i + after; i < end; i++ {
		if err := send(i); err != nil {
			t.Fatalf("message %d after the SDK's route refresh: %v", i, err)
		}
	}
	t.Logf("%d messages: acknowledged by the old master %d, by the new %d", i, len(ackedBy[masterEP]), len(ackedBy[newEP]))
	if len(ackedBy) != 2 || len(ackedBy[masterEP]) != before {
		t.Fatalf("acknowledged by %v: want the old master (%d, before the kill) and the new one", ackedBy, before)
	}
	// The consumer catches up: every acknowledged message received within
	// 10 s of the latest of its SDK reading the new route, the last send,
	// and the end of the invisibility of a delivery the old master made
	// just before it died (one whose answer the consumer never got).
	caughtUpBy := time.Now()
	for _, at := range []time.Time{refreshed[1], killed.Add(consumerInvisible)} {
		if at.After(caughtUpBy) {
			caughtUpBy = at
		}
	}
	cons.waitReceived(t, acked, caughtUpBy.Add(10*time.Second), "after the failover")
	distinct, dups, ackFails, last := cons.stats()
	phase(fmt.Sprintf("SimpleConsumer caught up: %d distinct messages received (%d acknowledged sends), %d received again, %d acks failed; last delivery %.2fs",
		distinct, len(acked), dups, ackFails, last.Sub(began).Seconds()))
	cons.halt()

	// Nothing acknowledged is lost: every message is on the new master.
	var stored [][]byte
	for q := range int32(queues) {
		for _, r := range processtest.WaitQueue(t, newAddr, topic, q, 0, 5*time.Second) {
			stored = append(stored, r.Body)
		}
	}
	for _, bodies := range ackedBy {
		for _, body := range bodies {
			if !slices.ContainsFunc(stored, func(s []byte) bool { return bytes.Equal(s, []byte(body)) }) {
				t.Fatalf("%s acknowledged but not on the new master %s (%d stored)", body, newAddr, len(stored))
			}
		}
	}
}
