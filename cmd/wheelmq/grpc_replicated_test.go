package main

// A v5 producer and a v5 SimpleConsumer on a replicated group of three,
// each through a replica's endpoint, across a SIGKILL of the master.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestGRPCReplicatedGroupFailover: operations.md's group of three
// (--replication controller, --min-in-sync-replicas 2, --flush sync); the
// routes list every member's endpoint, master first, and a replica's
// endpoint forwards what only a master serves to the master (a raw send
// through one is answered by the master, a forged forwarded address is
// refused); a v5 producer and a v5 SimpleConsumer, each given one
// replica's endpoint as access point, send and receive; the master is
// SIGKILLed; sends are acknowledged again within 10 s of the new master
// being registered, without the SDKs reading the route again (each SDK's
// connection moves to a live member, whose endpoint forwards to the new
// master); every acknowledged message is on the new master, and the
// consumer received every one of them (at least once) within 10 s of the
// new master, the last send and the end of the invisibility of a delivery
// the old master made just before it died.
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
		return len(qs) == queues && eps["broker-a"] == masterEP && len(qs[0].GetBroker().GetEndpoints().GetAddresses()) == 3
	})
	phase("group up, the replica's route lists the master first, then both replicas")

	// A replica's endpoint forwards a send to the master, which stores it;
	// a forwarded address without the group's proof is refused.
	fwdBefore := forwardedCalls(t, replicaMetrics[0], "SendMessage")
	if st := rawSendV5(t, replicaEP, topic, "forwarded-0", nil); st.GetCode() != v2.Code_OK {
		t.Fatalf("a send through the replica's endpoint %s: %v", replicaEP, st)
	}
	if n := forwardedCalls(t, replicaMetrics[0], "SendMessage"); n != fwdBefore+1 {
		t.Fatalf("the replica forwarded %v sends, want %v", n, fwdBefore+1)
	}
	forged := map[string]string{"x-wheelmq-forwarded-for": "10.9.9.9:1234 " + strconv.FormatInt(time.Now().UnixMilli(), 10) + " bm90LWEtcHJvb2Y"}
	if st := rawSendV5(t, masterEP, topic, "forged-0", forged); st != nil {
		t.Fatalf("a send with a forged forwarded address was answered %v, want PERMISSION_DENIED", st)
	}
	phase("a send through a replica was forwarded to the master; a forged forwarded address was refused")

	p, err := rmq.NewProducer(&rmq.Config{Endpoint: replicaEP, Credentials: &credentials.SessionCredentials{}},
		rmq.WithTopics(topic), rmq.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	cons := newFailoverConsumer(t, replicaEPs[1], topic+"-cg", topic)
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

	acked := []string{"forwarded-0"}
	send := func(i int) error {
		body := fmt.Sprintf("f-%04d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(body)})
		cancel()
		if err != nil {
			return err
		}
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
	cons.waitReceived(t, acked[:before/2], time.Now().Add(10*time.Second), "before the kill")
	killed := time.Now()
	killMember(t, brokers, masterAddr)
	phase("master killed")
	bd2 := waitGroup(t, nsAddrs[1], 30*time.Second, func(b namesrv.BrokerData) bool {
		return b.BrokerAddrs[0] != "" && b.BrokerAddrs[0] != masterAddr && b.GRPCEndpoints[0] != "" && b.GRPCEndpoints[0] != masterEP
	})
	newAddr, newEP := bd2.BrokerAddrs[0], bd2.GRPCEndpoints[0]
	newAt := time.Now()
	phase("new master " + newEP + " registered")
	// Each message is sent until acknowledged (the SDK tries once): the
	// sends in flight at the kill, and those before the members know the
	// new master, fail; every one is acknowledged within 10 s of it.
	failed := 0
	for end := i + after; i < end; i++ {
		for {
			err := send(i)
			if err == nil {
				break
			}
			failed++
			if time.Since(newAt) > 10*time.Second {
				t.Fatalf("message %d not acknowledged within 10 s of the new master (%d failed tries; the last: %v)", i, failed, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	lastSend := time.Now()
	phase(fmt.Sprintf("%d messages acknowledged after the kill, %d tries failed", after, failed))
	// The consumer catches up: every acknowledged message received within
	// 10 s of the latest of the new master, the last send, and the end of
	// the invisibility of a delivery the old master made just before it
	// died (one whose answer the consumer never got).
	caughtUpBy := newAt
	for _, at := range []time.Time{lastSend, killed.Add(consumerInvisible)} {
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
	for _, body := range acked {
		if !slices.ContainsFunc(stored, func(s []byte) bool { return bytes.Equal(s, []byte(body)) }) {
			t.Fatalf("%s acknowledged but not on the new master %s (%d stored)", body, newAddr, len(stored))
		}
	}
	for _, s := range stored {
		if string(s) == "forged-0" {
			t.Fatal("the send with a forged forwarded address was stored")
		}
	}
}
