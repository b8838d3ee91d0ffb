package main

// docs/operations.md's replicated group on one machine ("On one machine,
// for a try"), started as written: three name servers with controllers and
// three brokers of group broker-a, none with --grpc-listen. Every broker
// gets a gRPC endpoint (the first the default port, the others aside),
// each endpoint answers routes that point at the group's master, and
// after a SIGKILL of the master the new master is in them.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// startArgs runs the binary with args and waits for /healthz at metrics.
func startArgs(t *testing.T, bin, metrics string, args ...string) *proc {
	t.Helper()
	p := &proc{metrics: metrics}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stderr = io.MultiWriter(os.Stderr, &p.stderr)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start wheelmq %s: %v", args[0], err)
	}
	p.exited = make(chan struct{})
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }() // ends with the process (Cleanup kills it)
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
	waitHealthz(t, p, 30*time.Second)
	return p
}

// groupInfo is broker-a's members as the name server at ns lists them.
func groupInfo(t *testing.T, ns string) namesrv.BrokerData {
	t.Helper()
	resp := processtest.Invoke(t, ns, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("cluster info from %s: %d %s", ns, resp.Code, resp.Remark)
	}
	var ci namesrv.ClusterInfo
	if err := json.Unmarshal(resp.Body, &ci); err != nil {
		t.Fatalf("cluster info %s: %v", resp.Body, err)
	}
	return ci.BrokerAddrTable["broker-a"]
}

// waitGroup polls ns until ok accepts broker-a's members.
func waitGroup(t *testing.T, ns string, within time.Duration, ok func(namesrv.BrokerData) bool) namesrv.BrokerData {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		bd := groupInfo(t, ns)
		if ok(bd) {
			return bd
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker-a at %s not as expected within %v: %+v", ns, within, bd)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// groupMember is one broker of the example's group.
type groupMember struct {
	p      *proc
	listen string
}

// startExampleGroup starts operations.md's one-machine example as written
// (ports the test holds): three name servers with controllers, three
// brokers of broker-a without --grpc-listen. It returns the name servers'
// addresses and the brokers.
func startExampleGroup(t *testing.T) ([]string, []groupMember) {
	t.Helper()
	bin := buildBinary(t)
	dir := t.TempDir()
	var nsAddrs, peers []string
	var nsMetrics []string
	for range 3 {
		nsAddrs = append(nsAddrs, processtest.ReserveAddr(t))
		peers = append(peers, processtest.ReserveAddr(t))
		nsMetrics = append(nsMetrics, processtest.ReserveAddr(t))
	}
	for i := range 3 {
		startArgs(t, bin, nsMetrics[i], "namesrv", "--listen", nsAddrs[i], "--data", fmt.Sprintf("%s/ns%d", dir, i),
			"--controller-listen", peers[i], "--controller-peers", strings.Join(peers, ";"), "--metrics-listen", nsMetrics[i])
	}
	ns := strings.Join(nsAddrs, ";")
	var brokers []groupMember
	for i := range 3 {
		m := groupMember{listen: processtest.ReserveAddr(t)}
		metrics := processtest.ReserveAddr(t)
		// As written: no --grpc-listen (the default, 8081 on --listen's
		// host, moves aside when taken).
		m.p = startArgs(t, bin, metrics, "broker", "--namesrv", ns, "--broker-name", "broker-a", "--listen", m.listen,
			"--ha-listen", processtest.ReserveAddr(t), "--replication", "controller", "--min-in-sync-replicas", "2", "--flush", "sync",
			"--data", fmt.Sprintf("%s/b%d", dir, i), "--metrics-listen", metrics, "--log-level", "warn")
		brokers = append(brokers, m)
	}
	return nsAddrs, brokers
}

// waitGroupReady waits until the name server at ns lists the three
// members of broker-a, a master, and each member's own gRPC endpoint on
// --listen's host.
func waitGroupReady(t *testing.T, ns string) namesrv.BrokerData {
	t.Helper()
	return waitGroup(t, ns, 30*time.Second, func(bd namesrv.BrokerData) bool {
		if len(bd.BrokerAddrs) != 3 || bd.BrokerAddrs[0] == "" || len(bd.GRPCEndpoints) != 3 {
			return false
		}
		seen := map[string]bool{}
		for _, ep := range bd.GRPCEndpoints {
			if !strings.HasPrefix(ep, "127.0.0.1:") {
				return false
			}
			seen[ep] = true
		}
		return len(seen) == 3
	})
}

// killMember SIGKILLs the member listening on addr.
func killMember(t *testing.T, brokers []groupMember, addr string) {
	t.Helper()
	for _, m := range brokers {
		if m.listen == addr {
			if err := m.p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-m.p.exited
			return
		}
	}
	t.Fatalf("no member listens on %s", addr)
}

func TestOperationsExampleStartsWithGRPC(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	nsAddrs, brokers := startExampleGroup(t)
	bd := waitGroupReady(t, nsAddrs[0])
	t.Logf("broker-a: %v, gRPC %v", bd.BrokerAddrs, bd.GRPCEndpoints)
	masterAddr, masterEP := bd.BrokerAddrs[0], bd.GRPCEndpoints[0]

	topic := processtest.Unique("example")
	createTopicAt(t, masterAddr, topic, 4)
	pointsAt := func(ep string) func([]*v2.MessageQueue) bool {
		return func(qs []*v2.MessageQueue) bool {
			eps, counts := routeEndpoints(qs)
			return len(qs) == 4 && counts["broker-a"] == 4 && eps["broker-a"] == ep
		}
	}
	for _, ep := range bd.GRPCEndpoints {
		waitRoute(t, ep, topic, 10*time.Second, pointsAt(masterEP)) // a replica's endpoint routes to the master
	}

	// SIGKILL the master: the new one is in the routes of the others.
	var survivor string
	killMember(t, brokers, masterAddr)
	for id, ep := range bd.GRPCEndpoints {
		if id != 0 {
			survivor = ep
		}
	}
	bd2 := waitGroup(t, nsAddrs[1], 30*time.Second, func(b namesrv.BrokerData) bool {
		return b.BrokerAddrs[0] != "" && b.BrokerAddrs[0] != masterAddr && b.GRPCEndpoints[0] != "" && b.GRPCEndpoints[0] != masterEP
	})
	waitRoute(t, survivor, topic, 10*time.Second, pointsAt(bd2.GRPCEndpoints[0]))
	t.Logf("new master %s, gRPC %s", bd2.BrokerAddrs[0], bd2.GRPCEndpoints[0])
}
