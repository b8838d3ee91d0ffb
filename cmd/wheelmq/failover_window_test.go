package main

// The failover window (`task bench:failover`, docs/operations.md "Failover:
// what each client sees"): how long each client's sends fail after the
// master of a replicated group of three is SIGKILLed.

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestFailoverWindow measures, WHEELMQ_FAILOVER_RUNS times (unset: skipped),
// operations.md's group of three (three name servers with controllers,
// --min-in-sync-replicas 2, --flush sync) with three clients sending one
// message every ~10 ms each: the official remoting Go client, the native
// producer and the Go v5 SDK (given a replica's endpoint). The master is
// SIGKILLed a random 0-30 s after the clients started (the official
// client's and the SDK's route refreshes run every 30 s from their start);
// the test logs when the new master was in the name server and, per
// client, the first and last failed send, the first acknowledged one after
// it, and how many failed. It asserts only what is not a speed: every
// acknowledged message is on the new master. A failed send can still be
// stored (the master stored and replicated it, then died before
// answering); the log counts those, and bodies stored twice.
func TestFailoverWindow(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("WHEELMQ_FAILOVER_RUNS"))
	if runs <= 0 {
		t.Skip("a measurement: task bench:failover (WHEELMQ_FAILOVER_RUNS=n)")
	}
	for run := range runs {
		t.Run(fmt.Sprintf("run%d", run+1), func(t *testing.T) { failoverRun(t, time.Duration(run*7919%30000)*time.Millisecond) })
	}
}

// failoverRun is one run of TestFailoverWindow, the kill after the clients
// sent for phase.
func failoverRun(t *testing.T, phase time.Duration) {
	nsAddrs, brokers := startExampleGroup(t)
	bd := waitGroupReady(t, nsAddrs[0])
	masterAddr, masterEP := bd.BrokerAddrs[0], bd.GRPCEndpoints[0]
	var replicaEP string
	for id, ep := range bd.GRPCEndpoints {
		if id != 0 {
			replicaEP = ep
		}
	}
	topic := processtest.Unique("window")
	const queues = 4
	createTopicAt(t, masterAddr, topic, queues)
	processtest.WaitRoute(t, nsAddrs[0], topic)

	senders := []*failoverSender{officialSender(t, nsAddrs, topic), nativeSender(t, nsAddrs, topic), v5Sender(t, replicaEP, topic)}
	stop := make(chan struct{})
	wait := runSenders(senders, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			wait()
		}
	}()
	time.Sleep(phase) // the kill's place in the clients' 30 s refresh cycles: what is measured
	killed := time.Now()
	killMember(t, brokers, masterAddr)
	bd2 := waitGroup(t, nsAddrs[1], 30*time.Second, func(b namesrv.BrokerData) bool {
		return b.BrokerAddrs[0] != "" && b.BrokerAddrs[0] != masterAddr && b.GRPCEndpoints[0] != "" && b.GRPCEndpoints[0] != masterEP
	})
	ready := time.Since(killed)
	newAddr := bd2.BrokerAddrs[0]

	// Until every client has sent for 3 s without a failure, at least 35 s
	// (past one 30 s refresh of each) and at most 100 s.
	const least, most, calm = 35 * time.Second, 100 * time.Second, 3 * time.Second
	for {
		all := true
		for _, s := range senders {
			all = all && recovered(s, calm)
		}
		if since := time.Since(killed); (all && since >= least) || since >= most {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wait()
	stopped = true

	// Every acknowledged body on the new master (the last ones may still be
	// on their way to the consume queue: read again until all are there or
	// 10 s passed).
	var acked []string
	for _, s := range senders {
		acked = append(acked, windowOf(s, killed).acked...)
	}
	count := map[string]int{}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		clear(count)
		for q := range int32(queues) {
			for _, r := range processtest.WaitQueue(t, newAddr, topic, q, 0, 5*time.Second) {
				count[string(r.Body)]++
			}
		}
		if !slices.ContainsFunc(acked, func(b string) bool { return count[b] == 0 }) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("kill %.1f s after the clients started; new master %s in the name server %v after the SIGKILL",
		phase.Seconds(), newAddr, ready.Round(time.Millisecond))
	for _, s := range senders {
		w := windowOf(s, killed)
		storedFailed, twice := 0, 0
		for _, b := range w.failedBodies {
			if count[b] > 0 {
				storedFailed++
			}
		}
		for _, b := range w.acked {
			if count[b] == 0 {
				t.Errorf("%s: %s acknowledged but not on the new master %s", s.name, b, newAddr)
			}
			if count[b] > 1 {
				twice++
			}
		}
		if w.failed == 0 {
			t.Logf("%-28s %5d sends, none failed; window 0; longest send %.2f s, acknowledged and stored twice %d",
				s.name, w.sends, w.longest.Seconds(), twice)
			continue
		}
		next := "none before the measurement ended"
		if w.firstOKAfter > 0 {
			next = fmt.Sprintf("%6.2f s", w.firstOKAfter.Seconds())
		}
		t.Logf("%-28s %5d sends, %4d failed: first %6.2f s, last %6.2f s after the kill, next ack %s; window %6.2f s; "+
			"longest send %.2f s; failed but stored %d, acknowledged and stored twice %d; last error: %s",
			s.name, w.sends, w.failed, w.first.Seconds(), w.last.Seconds(), next,
			(w.last - w.first).Seconds(), w.longest.Seconds(), storedFailed, twice, shorten(w.lastErr, 160))
		if len(w.acked) == 0 {
			t.Errorf("%s: nothing acknowledged", s.name)
		}
	}
}

// shorten is s cut to at most n bytes.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
