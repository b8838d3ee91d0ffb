package stage_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
)

var errFatal = errors.New("fatal test failure")

// request is a Failable job: it records how it was answered.
type request struct {
	gate   chan struct{} // block the actor until closed (nil: no wait)
	crash  error         // panic with this after the gate (nil: none)
	answer chan error    // receives nil when served, the error when failed
}

func (r *request) Fail(err error) { r.answer <- err }

// server answers requests, optionally crashing.
type server struct{}

func (server) Receive(ctx actor.Context) {
	if r, ok := ctx.Message().(*request); ok {
		if r.gate != nil {
			<-r.gate
		}
		if r.crash != nil {
			panic(r.crash)
		}
		r.answer <- nil
	}
}

func newRequest() *request { return &request{answer: make(chan error, 2)} }

func answerOf(t *testing.T, r *request) error {
	t.Helper()
	select {
	case err := <-r.answer:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("request never answered")
		return nil
	}
}

// spawnRetiring spawns a server stage under a policy that stops it for
// good on errFatal, with the stage layer retiring it.
func spawnRetiring(t *testing.T) (*stage.Registry, *stage.Stage, *prometheus.Registry) {
	t.Helper()
	sys := stage.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	reg := prometheus.NewRegistry()
	stages := stage.NewRegistry(reg)
	strat := supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond,
		Fatal: []error{errFatal}, OnRestart: stages.Restarted, Retire: stages.Retire})
	s, err := stages.Spawn(sys, strat, "svc", func(*stage.Stage) actor.Actor { return server{} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return stages, s, reg
}

func TestPanicFailsTheRequestInFlight(t *testing.T) {
	_, s, _ := spawnRetiring(t)
	crashing := newRequest()
	crashing.crash = errors.New("transient")
	s.Send(crashing)
	if err := answerOf(t, crashing); err == nil || !strings.Contains(err.Error(), "transient") {
		t.Fatalf("crashed request answered with %v, want the failure", err)
	}
	// The stage was restarted and serves again.
	ok := newRequest()
	s.Send(ok)
	if err := answerOf(t, ok); err != nil {
		t.Fatalf("request after restart: %v", err)
	}
	if s.Down() != nil {
		t.Fatalf("a restarted stage is not down: %v", s.Down())
	}
}

func TestRetiredStageFailsQueuedAndLaterRequests(t *testing.T) {
	stages, s, reg := spawnRetiring(t)
	gate := make(chan struct{})
	fatal := &request{gate: gate, crash: errFatal, answer: make(chan error, 2)}
	s.Send(fatal)
	queued := []*request{newRequest(), newRequest(), newRequest()}
	for _, q := range queued {
		s.Send(q)
	}
	close(gate) // the stage now fails fatally with three requests queued
	if err := answerOf(t, fatal); err == nil {
		t.Fatal("the failing request was answered as served")
	}
	for i, q := range queued {
		err := answerOf(t, q)
		if !errors.Is(err, stage.ErrDown) {
			t.Fatalf("queued request %d answered with %v, want a stage-down error", i, err)
		}
		if !strings.Contains(err.Error(), "svc") || !strings.Contains(err.Error(), "fatal test failure") {
			t.Fatalf("down error %q does not name the stage and its cause", err)
		}
	}
	later := newRequest()
	s.Send(later)
	if err := answerOf(t, later); !errors.Is(err, stage.ErrDown) {
		t.Fatalf("later request answered with %v, want a stage-down error", err)
	}
	down := stages.Down()
	if len(down) != 1 || down[0].Stage != "svc" {
		t.Fatalf("Down() = %v, want [svc]", down)
	}
	if v := sample(t, reg, "wheelmq_stage_up", "svc"); v != 0 {
		t.Fatalf("wheelmq_stage_up = %v, want 0", v)
	}
	if d := s.Depth(); d != 0 {
		t.Fatalf("depth %d after a retired stage answered everything", d)
	}
}

func TestStageUpWhileRunning(t *testing.T) {
	stages, _, reg := spawnRetiring(t)
	if v := sample(t, reg, "wheelmq_stage_up", "svc"); v != 1 {
		t.Fatalf("wheelmq_stage_up = %v, want 1", v)
	}
	if d := stages.Down(); len(d) != 0 {
		t.Fatalf("Down() = %v on a healthy registry", d)
	}
}

type tick struct{}

// ticker counts the ticks it gets and re-arms on each.
type ticker struct {
	timer *stage.Timer
	got   *atomic.Int64
}

func (k *ticker) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		k.timer.Arm(time.Millisecond, tick{})
		k.timer.Arm(time.Millisecond, tick{}) // replaces: still one chain
	case tick:
		if k.got.Add(1) < 5 {
			k.timer.Arm(time.Millisecond, tick{})
		}
	case *actor.Stopping:
		k.timer.Stop()
	}
}

func TestTimerArmReplacesPendingTick(t *testing.T) {
	sys := stage.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	stages := stage.NewRegistry(nil)
	var got atomic.Int64
	s, err := stages.Spawn(sys, supervisor.New(supervisor.Policy{}), "ticker", func(self *stage.Stage) actor.Actor {
		return &ticker{timer: self.NewTimer(), got: &got}
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "five ticks", func() bool { return got.Load() >= 5 })
	time.Sleep(20 * time.Millisecond)
	if n := got.Load(); n != 5 {
		t.Fatalf("%d ticks, want exactly 5 (a second chain of ticks was started)", n)
	}
	s.Stop()
}
