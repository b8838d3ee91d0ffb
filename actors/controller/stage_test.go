package controller

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/portres"
)

// Connections whose requests the test's hook makes panic.
const (
	boomRequest uint64 = 101 // while the request is handled
	boomApplied uint64 = 102 // while its apply's outcome is handled
)

// TestStagePanicRestartsAndAnswers injects panics into the controller's
// stage, once in a request handler and once in an apply outcome: each
// panicking request is answered SYSTEM_ERROR, the supervisor restarts the
// stage (wheelmq_actor_restarts_total{stage="controller"} counts it), the
// next request is served, and the rebuilt liveness table gives the master
// a fresh lease instead of electing it away.
func TestStagePanicRestartsAndAnswers(t *testing.T) {
	prom := prometheus.NewRegistry()
	addr := portres.Hold(t) // a port this test holds: the controller's raft binds it
	c, err := Start(Config{Listen: addr, Security: RaftSecurity{Loopback: netloop.LoopbackListen}, Dir: filepath.Join(t.TempDir(), "controller"), ScanInterval: 10 * time.Millisecond,
		RemotingAddr: func() string { return "127.0.0.1:9876" }, Stages: stage.NewRegistry(prom),
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	hook := func(m any) {
		switch m := m.(type) {
		case *request:
			if m.conn == boomRequest {
				panic("injected request panic")
			}
		case *applied:
			if m.req != nil && m.req.conn == boomApplied {
				panic("injected apply-outcome panic")
			}
		}
	}
	c.panicHook.Store(&hook)
	waitFor(t, "leadership", c.IsLeader)

	hb := HeartbeatRequest{Heartbeat{Cluster: "c", BrokerName: "b", BrokerAddr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912"}}
	// The registration is applied, but its outcome's handler panics.
	if r := handle(t, c, hb, boomApplied); r.Code != wirecode.SystemError {
		t.Fatalf("heartbeat whose outcome panicked: code %d %q, want SYSTEM_ERROR", r.Code, r.Remark)
	}
	waitFor(t, "restart 1", func() bool { return restarts(t, prom) == 1 })
	r := handle(t, c, hb, 7)
	if role, _ := r.Result.(Role); r.Code != wirecode.Success || role.ReplicaID != 1 || role.Group.MasterEpoch != 1 {
		t.Fatalf("heartbeat after restart: code %d %q %+v", r.Code, r.Remark, r.Result)
	}

	if r := handle(t, c, MetadataRequest{}, boomRequest); r.Code != wirecode.SystemError {
		t.Fatalf("request that panicked: code %d %q, want SYSTEM_ERROR", r.Code, r.Remark)
	}
	waitFor(t, "restart 2", func() bool { return restarts(t, prom) == 2 })
	r = handle(t, c, MetadataRequest{}, 7)
	if md, _ := r.Result.(Metadata); r.Code != wirecode.Success || !md.IsLeader {
		t.Fatalf("metadata after restart: code %d %q %+v", r.Code, r.Remark, r.Result)
	}

	// The restart emptied the liveness table; many scans later the master
	// still holds its (fresh) lease: no election.
	time.Sleep(20 * c.cfg.ScanInterval)
	if g, ok := c.Group("c", "b"); !ok || g.MasterID != 1 || g.MasterEpoch != 1 {
		t.Fatalf("group after restart: %+v %v, want master 1 epoch 1", g, ok)
	}
	if got := restarts(t, prom); got != 2 {
		t.Fatalf("restarts = %v, want 2", got)
	}

	// Stopped: the stage is gone and a request is refused at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if st := c.st.Load(); !st.Stopped() {
		t.Fatal("stage still running after Stop")
	}
	if r := handle(t, c, MetadataRequest{}, 7); r.Code != wirecode.SystemBusy {
		t.Fatalf("request after stop: code %d %q, want SYSTEM_BUSY", r.Code, r.Remark)
	}
}

// handle sends req through Handle, as from connection conn, and waits
// for its answer.
func handle(t *testing.T, c *Controller, req Request, conn uint64) Answer {
	t.Helper()
	ch := make(chan Answer, 2)
	c.Handle(req, conn, func(a Answer) { ch <- a })
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatalf("no answer to %T", req)
		return Answer{}
	}
}

// restarts reads wheelmq_actor_restarts_total{stage="controller"}.
func restarts(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wheelmq_actor_restarts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == StageName {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
