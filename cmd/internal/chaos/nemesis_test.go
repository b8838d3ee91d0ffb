package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/cluster"
	"github.com/wheelmq/wheelmq/cmd/internal/chaos/history"
	"github.com/wheelmq/wheelmq/cmd/internal/chaos/proxy"
)

// nemesis is one kind of fault: inject applies it to group g and returns
// heal, which undoes it (restarts what it killed). expectFailover says
// whether the master must change (failover time (a) is asserted then).
type nemesis struct {
	name           string
	expectFailover bool
	// bound is the target of failover time (a) when expectFailover.
	bound  time.Duration
	inject func(t *testing.T, c *cluster.Cluster, g *cluster.Group, master *cluster.Broker, rng *rand.Rand) (heal func())
}

// faultFor is how long a fault lasts before its heal.
const faultFor = 10 * time.Second

// restartAfterHeal restarts b's process and waits for its /healthz.
func restart(t *testing.T, p interface {
	Restart() error
	Output() string
}, wait func(time.Duration) error, what string) {
	t.Helper()
	if err := p.Restart(); err != nil {
		t.Errorf("restart %s: %v", what, err)
		return
	}
	if err := wait(30 * time.Second); err != nil {
		t.Errorf("%s after restart: %v\n%s", what, err, p.Output())
	}
}

var nemeses = map[string]nemesis{
	"kill-master": {name: "kill-master", expectFailover: true, bound: 5 * time.Second,
		inject: func(t *testing.T, _ *cluster.Cluster, _ *cluster.Group, m *cluster.Broker, _ *rand.Rand) func() {
			m.Proc.Kill()
			return func() { restart(t, m.Proc, m.WaitHealthy, m.String()) }
		}},
	"blackhole-master": {name: "blackhole-master", expectFailover: true, bound: 8 * time.Second,
		inject: func(_ *testing.T, _ *cluster.Cluster, _ *cluster.Group, m *cluster.Broker, _ *rand.Rand) func() {
			m.Isolate(proxy.Blackhole)
			return func() { m.Isolate(proxy.Pass) }
		}},
	"blackhole-master-controller": {name: "blackhole-master-controller",
		inject: func(t *testing.T, c *cluster.Cluster, _ *cluster.Group, m *cluster.Broker, _ *rand.Rand) func() {
			leader, err := c.ControllerLeader()
			if err != nil {
				t.Errorf("controller leader: %v", err)
				return func() {}
			}
			m.IsolateFromNamesrv(leader, proxy.Blackhole)
			return func() { m.IsolateFromNamesrv(leader, proxy.Pass) }
		}},
	"blackhole-master-replicas": {name: "blackhole-master-replicas",
		inject: func(_ *testing.T, _ *cluster.Cluster, _ *cluster.Group, m *cluster.Broker, _ *rand.Rand) func() {
			m.IsolateFromReplicas(proxy.Blackhole)
			return func() { m.IsolateFromReplicas(proxy.Pass) }
		}},
	"sigstop-master": {name: "sigstop-master", expectFailover: true, bound: 8 * time.Second,
		inject: func(t *testing.T, _ *cluster.Cluster, _ *cluster.Group, m *cluster.Broker, _ *rand.Rand) func() {
			if err := m.Proc.Pause(); err != nil {
				t.Errorf("SIGSTOP %s: %v", m, err)
			}
			return func() {
				if err := m.Proc.Resume(); err != nil {
					t.Errorf("SIGCONT %s: %v", m, err)
				}
			}
		}},
	"kill-master-and-leader": {name: "kill-master-and-leader", expectFailover: true, bound: 8 * time.Second,
		inject: func(t *testing.T, c *cluster.Cluster, _ *cluster.Group, m *cluster.Broker, _ *rand.Rand) func() {
			leader, err := c.ControllerLeader()
			if err != nil {
				t.Errorf("controller leader: %v", err)
			}
			m.Proc.Kill()
			if leader != nil {
				leader.Proc.Kill()
			}
			return func() {
				if leader != nil {
					restart(t, leader.Proc, leader.WaitHealthy, fmt.Sprintf("ns%d", leader.Index))
				}
				restart(t, m.Proc, m.WaitHealthy, m.String())
			}
		}},
	"kill-replica": {name: "kill-replica",
		inject: func(t *testing.T, _ *cluster.Cluster, g *cluster.Group, m *cluster.Broker, rng *rand.Rand) func() {
			var replicas []*cluster.Broker
			for _, b := range g.Brokers {
				if b != m {
					replicas = append(replicas, b)
				}
			}
			r := replicas[rng.IntN(len(replicas))]
			r.Proc.Kill()
			return func() { restart(t, r.Proc, r.WaitHealthy, r.String()) }
		}},
	"rolling-restart": {name: "rolling-restart",
		inject: func(t *testing.T, c *cluster.Cluster, _ *cluster.Group, _ *cluster.Broker, _ *rand.Rand) func() {
			for _, n := range c.Namesrvs {
				restart(t, n.Proc, n.WaitHealthy, fmt.Sprintf("ns%d", n.Index))
				time.Sleep(2 * time.Second)
			}
			for _, b := range c.Brokers() {
				restart(t, b.Proc, b.WaitHealthy, b.String())
				time.Sleep(2 * time.Second)
			}
			return func() {}
		}},
}

// shortNemeses are the normal run's faults, shortFaults of them a run;
// longNemeses every fault.
const shortFaults = 2

var (
	shortNemeses = []string{"kill-master", "blackhole-master", "sigstop-master"}
	longNemeses  = []string{"kill-master", "blackhole-master", "blackhole-master-controller",
		"blackhole-master-replicas", "sigstop-master", "kill-master-and-leader", "kill-replica", "rolling-restart"}
)

// failover is what one fault measured.
type failover struct {
	nemesis string
	group   string
	// newMaster: fault -> every name server routes a new brokerId-0
	// address (0: no change seen); firstOK: fault -> first ok send (0:
	// none before the heal).
	newMaster, firstOK time.Duration
}

// runNemesis injects n on g, measures, heals after faultFor and waits for
// the group to have a master again.
func runNemesis(t *testing.T, c *cluster.Cluster, g *cluster.Group, n nemesis, rec *history.Recorder, rng *rand.Rand) failover {
	t.Helper()
	m, err := c.WaitMaster(g, "", 30*time.Second)
	if err != nil {
		t.Fatalf("before %s: %v", n.name, err)
	}
	out := failover{nemesis: n.name, group: g.Name}
	start := time.Now()
	rec.Nemesis(fmt.Sprintf("start %s on %s (master %s %s)", n.name, g.Name, m, m.Addr()))
	heal := n.inject(t, c, g, m, rng)
	if n.expectFailover {
		if nm, err := c.WaitMaster(g, m.Addr(), faultFor); err == nil {
			out.newMaster = time.Since(start)
			rec.Nemesis(fmt.Sprintf("new master of %s: %s after %v", g.Name, nm, out.newMaster))
		}
	}
	time.Sleep(time.Until(start.Add(faultFor)))
	if ok := firstOKAfter(rec.Ops(), start.UnixMilli()); ok != 0 {
		out.firstOK = time.Duration(ok-start.UnixMilli()) * time.Millisecond
	}
	heal()
	rec.Nemesis(fmt.Sprintf("healed %s on %s", n.name, g.Name))
	if _, err := c.WaitMaster(g, "", 30*time.Second); err != nil {
		t.Errorf("after %s: %v", n.name, err)
	}
	// Failover time (b): with one group the Go client finds the new master
	// only at its next route poll (30 s); with two, its retries pick the
	// other group, but a send already on its way to the dead or silent
	// master waits out the client's 3 s send timeout first, and the first
	// retry can land on the same group again (two timeouts, then the
	// other group). That is the Go client's cost, not the failover's: the
	// native producer re-routes at once (TestNativeProducerAfterMasterLoss).
	okBound := 2*3*time.Second + time.Second
	if len(c.Groups) == 1 {
		okBound = out.newMaster + 30*time.Second
	}
	for out.firstOK == 0 && time.Since(start) < okBound+time.Second {
		if ok := firstOKAfter(rec.Ops(), start.UnixMilli()); ok != 0 {
			out.firstOK = time.Duration(ok-start.UnixMilli()) * time.Millisecond
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	switch {
	case !n.expectFailover:
	case len(c.Groups) > 1 && (out.firstOK == 0 || out.firstOK > okBound):
		// With two groups the Go client's availability is its own retry
		// policy's: a blackholed master still in its routes (until its 30 s
		// poll) costs every other send a 3 s timeout, so a producer whose
		// next sends keep drawing that group's queues can go past any
		// bound. Reported, not failed; the broker's failover is (a), and
		// the native producer's is asserted by TestNativeProducerAfterMasterLoss.
		t.Logf("%s on %s: fault -> first ok send of the Go client took %v (%v expected; 0: none)", n.name, g.Name, out.firstOK, okBound)
	case out.firstOK == 0 || out.firstOK > okBound:
		t.Errorf("%s on %s: fault -> first ok send took %v, bound %v (0: none)", n.name, g.Name, out.firstOK, okBound)
	}
	if n.expectFailover && (out.newMaster == 0 || out.newMaster > n.bound) {
		t.Errorf("%s on %s: failover (fault -> new brokerId-0 on every name server) took %v, bound %v (0: none within %v)",
			n.name, g.Name, out.newMaster, n.bound, faultFor)
	}
	t.Logf("%s on %s: new master after %v, first ok send after %v", n.name, g.Name, out.newMaster, out.firstOK)
	return out
}
