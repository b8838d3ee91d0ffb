package main

// A v5 producer on a replicated group of three through a replica's
// endpoint, across a SIGKILL of the master.

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
// v5 producer given a replica's endpoint sends to the master (its route
// points there); the master is SIGKILLed; the sends go on to the new
// master once the SDK reads the route again (every 30 s, see
// TestGRPCClusterThroughOneEndpoint), each acknowledged at once; every
// acknowledged message is on the new master.
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
	var replicaEP, replicaMetrics string
	for id, ep := range bd.GRPCEndpoints {
		if id != 0 {
			replicaEP = ep
			for _, m := range brokers {
				if m.listen == bd.BrokerAddrs[id] {
					replicaMetrics = m.p.metrics
				}
			}
		}
	}
	if replicaMetrics == "" {
		t.Fatalf("no member listens on %v", bd.BrokerAddrs)
	}
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
	started := make(chan error, 1)
	go func() { started <- p.Start() }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start producer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("producer Start did not return within 20 s")
	}
	t.Cleanup(func() { _ = p.GracefulStop() })

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
	killMember(t, brokers, masterAddr)
	phase("master killed")
	bd2 := waitGroup(t, nsAddrs[1], 30*time.Second, func(b namesrv.BrokerData) bool {
		return b.BrokerAddrs[0] != "" && b.BrokerAddrs[0] != masterAddr && b.GRPCEndpoints[0] != "" && b.GRPCEndpoints[0] != masterEP
	})
	newAddr, newEP := bd2.BrokerAddrs[0], bd2.GRPCEndpoints[0]
	waitRoute(t, replicaEP, topic, 10*time.Second, func(qs []*v2.MessageQueue) bool {
		eps, _ := routeEndpoints(qs)
		return len(qs) == queues && eps["broker-a"] == newEP
	})
	phase("new master " + newEP + " in the replica's routes")
	// The SDK sends to the dead master until it reads the route again
	// (every 30 s): the test waits for that read at the access point,
	// sending nothing meanwhile (each send to the dead endpoint holds
	// the SDK's connection table for a 5 s dial).
	waitRouteRefresh(t, replicaMetrics, routeQueries(t, replicaMetrics), 75*time.Second)
	phase("the SDK read the route again")
	for end := i + after; i < end; i++ {
		if err := send(i); err != nil {
			t.Fatalf("message %d after the SDK's route refresh: %v", i, err)
		}
	}
	t.Logf("%d messages: acknowledged by the old master %d, by the new %d", i, len(ackedBy[masterEP]), len(ackedBy[newEP]))
	if len(ackedBy) != 2 || len(ackedBy[masterEP]) != before {
		t.Fatalf("acknowledged by %v: want the old master (%d, before the kill) and the new one", ackedBy, before)
	}

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
