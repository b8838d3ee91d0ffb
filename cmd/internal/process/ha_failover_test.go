package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// startControllers runs three name servers whose controllers form one raft
// group and returns their name-server addresses; they stop when the test
// ends.
func startControllers(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var peers, addrs []string
	for range 3 {
		peers = append(peers, processtest.ReserveAddr(t))
	}
	for i := range 3 {
		d := filepath.Join(dir, strconv.Itoa(i))
		n, err := process.Start(process.Config{NamesrvListen: "127.0.0.1:0", NamesrvDir: filepath.Join(d, "namesrv"),
			Controller: controller.Config{Listen: peers[i], Peers: peers, Dir: filepath.Join(d, "controller")}, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = n.Stop(ctx)
		})
		addrs = append(addrs, n.NamesrvAddr())
	}
	return addrs
}

// startMember runs a broker of group broker-a in controller mode (real
// replication stream on loopback, authenticated by the group's secret
// file) registered with namesrv.
func startMember(t *testing.T, namesrv []string) *process.Node {
	t.Helper()
	secret := haSecretFile(t)
	return processtest.Start(t, processtest.Options{Metrics: true, Mutate: func(c *pipeline.Config) {
		c.BrokerName = "broker-a"
		c.Replication, c.HAListen, c.MinInSyncReplicas = pipeline.ReplicationController, "127.0.0.1:0", 1
	}, MutateNode: func(c *process.Config) {
		c.NamesrvListen, c.NamesrvDir = "", ""
		c.Broker.NameServers = namesrv
		c.HASecretFile = secret
	}})
}

// startPair runs three name servers with controllers and a group of two
// members, and returns them once the first is master and the second in
// its sync-state set.
func startPair(t *testing.T) (master, replica *process.Node) {
	t.Helper()
	ns := startControllers(t)
	master = startMember(t, ns)
	haWait(t, "first member master", func() bool {
		return strings.Contains(haGet(t, "http://"+master.MetricsAddr()+"/healthz"), "role: master")
	})
	replica = startMember(t, ns)
	haWait(t, "second member in the sync-state set", func() bool {
		return strings.Contains(haGet(t, "http://"+master.MetricsAddr()+"/healthz"), "sync_state_set=[1 2]")
	})
	return master, replica
}

// haSecretFile writes the test group's replication secret (the same
// content on every call) to a file of its own.
func haSecretFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ha.secret")
	if err := os.WriteFile(f, []byte("broker-a-ha-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestNativeProducerAfterMasterLoss: three name servers with controllers
// and a group of two brokers. The master stops (its controller connection
// closes, as on a crash); the native producer's next send, with a 3 s send
// timeout, is acknowledged by the promoted replica within 3 s, after one
// failed attempt at most (the producer waits for the new route instead of
// spending its retries on the dead address).
func TestNativeProducerAfterMasterLoss(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	ns := startControllers(t)
	a := startMember(t, ns)
	haWait(t, "first member master", func() bool {
		return strings.Contains(haGet(t, "http://"+a.MetricsAddr()+"/healthz"), "role: master")
	})
	b := startMember(t, ns)
	haWait(t, "second member in the sync-state set", func() bool {
		return strings.Contains(haGet(t, "http://"+a.MetricsAddr()+"/healthz"), "sync_state_set=[1 2]")
	})
	p := nativeProducer(t, ns, producer.WithSendTimeout(3*time.Second), producer.WithRetries(2))
	topic := processtest.Unique("failover")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	haWait(t, "first send", func() bool {
		_, err := p.Send(ctx, producer.NewMessage(topic, []byte("warm")))
		return err == nil
	})
	for i := range 10 {
		if _, err := p.Send(ctx, producer.NewMessage(topic, []byte(fmt.Sprintf("before %d", i)))); err != nil {
			t.Fatalf("send %d before the failover: %v", i, err)
		}
	}

	var attempts []producer.SendInfo
	p2 := nativeProducer(t, ns, producer.WithSendTimeout(3*time.Second), producer.WithRetries(2),
		producer.WithHooks(producer.Hook{After: func(i *producer.SendInfo) { attempts = append(attempts, *i) }}))
	if _, err := p2.Send(ctx, producer.NewMessage(topic, []byte("route"))); err != nil {
		t.Fatalf("send of the second producer: %v", err)
	}
	attempts = nil
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer stopCancel()
	start := time.Now()
	if err := a.Stop(stopCtx); err != nil {
		t.Fatalf("stop the master: %v", err)
	}
	stopped := time.Since(start)
	res, err := p2.Send(ctx, producer.NewMessage(topic, []byte("after")))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("first send after the master stopped (%v later): %v", took, err)
	}
	t.Logf("master stopped in %v; first acknowledged send %v after the stop began, %d attempts", stopped, took, len(attempts))
	if res.Queue.Broker != "broker-a" {
		t.Fatalf("result %+v", res)
	}
	if last := attempts[len(attempts)-1]; last.Addr != b.BrokerAddr() {
		t.Fatalf("acknowledged by %s, want the promoted replica %s", last.Addr, b.BrokerAddr())
	}
	if len(attempts) > 2 {
		t.Fatalf("%d attempts: the producer spent its retries on the dead master", len(attempts))
	}
	// The figure is logged above (about 0.5 s on an idle machine, docs/operations.md); the
	// bound only proves the producer asked for the route at once instead of waiting for
	// its periodic refresh (30 s), with room for a loaded CI machine.
	if took-stopped > 10*time.Second {
		t.Fatalf("first acknowledged send %v after the master was gone, want well before the 30 s route refresh", took-stopped)
	}
	if !strings.Contains(haGet(t, "http://"+b.MetricsAddr()+"/healthz"), "role: master broker_id=0") {
		t.Fatal("the replica is not master")
	}
}
