package replication

import (
	"math/rand"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
)

// restarts reads wheelmq_actor_restarts_total{stage=name} from reg.
func restarts(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "wheelmq_actor_restarts_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == name {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// withRegistry gives a node's service a stage registry exported on reg.
func withRegistry(reg *prometheus.Registry) func(*Options) {
	stages := stage.NewRegistry(reg)
	return func(o *Options) { o.Stages = stages }
}

// TestStageRestartResumes: a failure injected in the replica's receiver
// (an append that fails) and in the master's sender (a read of its log
// that fails) while the master keeps appending restarts the stage (its
// supervisor counts it in wheelmq_actor_restarts_total); the new
// instances resume from the persisted positions and the logs end
// byte-identical.
func TestStageRestartResumes(t *testing.T) {
	mreg, rreg := prometheus.NewRegistry(), prometheus.NewRegistry()
	m := newNode(t, masterState(1, 1, 2), withRegistry(mreg))
	if err := m.epochs.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	r := newNode(t, role.State{}, withRegistry(rreg))
	r.follow(m, 2, 1)
	rng := rand.New(rand.NewSource(11))
	end := m.appendRecords(rng, 20)
	waitFor(t, "caught up", 5*time.Second, func() bool { return caughtUp(m, r) })

	inject := func(what string, svc *Service, n *int, reg *prometheus.Registry, name string) {
		t.Helper()
		before := restarts(t, reg, name)
		svc.faults.mu.Lock()
		*n = 1
		svc.faults.mu.Unlock()
		for i := 0; i < 5; i++ {
			end = m.appendRecords(rng, 5+rng.Intn(20))
			time.Sleep(5 * time.Millisecond)
		}
		waitFor(t, what+" restarted", 5*time.Second, func() bool { return restarts(t, reg, name) > before })
		waitFor(t, "caught up after "+what, 10*time.Second, func() bool { return caughtUp(m, r) })
		waitFor(t, "confirmed after "+what, 5*time.Second, func() bool { return m.svc.Confirmed() == end })
		sameLog(t, m, r)
	}
	inject("receiver", r.svc, &r.svc.faults.recv, rreg, ReceiverStageName)
	inject("sender", m.svc, &m.svc.faults.send, mreg, SenderStageName)
	if n := restarts(t, mreg, ReceiverStageName); n != 0 {
		t.Fatalf("master's receiver restarted %v times", n)
	}
	if d := r.svc.o.Stages.Down(); len(d) != 0 {
		t.Fatalf("stages down: %v", d)
	}
}
