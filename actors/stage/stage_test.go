package stage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
)

// sample reads one series of a family from reg: a counter or gauge value, or
// a histogram's sample count. It returns -1 when the series does not exist.
func sample(t *testing.T, reg *prometheus.Registry, name, stageName string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labelled := false
			for _, l := range m.GetLabel() {
				labelled = labelled || (l.GetName() == "stage" && l.GetValue() == stageName)
			}
			if !labelled {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// worker processes test messages.
type worker struct{ done chan<- string }

type job struct {
	id   string
	gate chan struct{} // when set, block until closed
}
type crash struct{}

func (w *worker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *job:
		w.done <- "enter " + m.id
		if m.gate != nil {
			<-m.gate
		}
	case *crash:
		panic(errors.New("crash requested"))
	}
}

type env struct {
	sys     *actor.ActorSystem
	reg     *prometheus.Registry
	metrics *stage.Registry
	strat   *supervisor.Strategy
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{sys: stage.NewSystem(zerolog.Nop()), reg: prometheus.NewRegistry()}
	e.metrics = stage.NewRegistry(e.reg)
	e.strat = supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond,
		OnRestart: e.metrics.Restarted})
	t.Cleanup(e.sys.Shutdown)
	return e
}

func (e *env) spawn(t *testing.T, name string, done chan string) *stage.Stage {
	t.Helper()
	s, err := e.metrics.Spawn(e.sys, e.strat, name, func(*stage.Stage) actor.Actor { return &worker{done: done} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func recv(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no %q within 5s", want)
	}
}

func TestSendDepthAndMetrics(t *testing.T) {
	e := newEnv(t)
	done := make(chan string, 100)
	s := e.spawn(t, "alpha", done)
	if s.Name() != "alpha" || s.PID().Id != "alpha" {
		t.Fatalf("Name %q PID %q, want alpha", s.Name(), s.PID().Id)
	}

	// Hold the actor on the first message so the rest pile up.
	gate := make(chan struct{})
	s.Send(&job{id: "0", gate: gate})
	recv(t, done, "enter 0")
	const n = 10
	for i := 1; i < n; i++ {
		s.Send(&job{id: "x"})
	}
	if got := s.Depth(); got != n-1 {
		t.Errorf("Depth() with the actor blocked = %d, want %d", got, n-1)
	}
	if got := sample(t, e.reg, "wheelmq_actor_mailbox_depth", "alpha"); got != n-1 {
		t.Errorf("mailbox_depth gauge = %v, want %d", got, n-1)
	}
	if got := sample(t, e.reg, "wheelmq_actor_messages_total", "alpha"); got != 0 {
		t.Errorf("messages_total while the first message runs = %v, want 0", got)
	}

	close(gate)
	for i := 1; i < n; i++ {
		recv(t, done, "enter x")
	}
	eventually(t, "messages_total to reach n", func() bool {
		return sample(t, e.reg, "wheelmq_actor_messages_total", "alpha") == n
	})
	// System messages (Started) are not counted: exactly n.
	if got := sample(t, e.reg, "wheelmq_actor_messages_total", "alpha"); got != n {
		t.Errorf("messages_total = %v, want %d", got, n)
	}
	if got := sample(t, e.reg, "wheelmq_actor_process_seconds", "alpha"); got != n {
		t.Errorf("process_seconds count = %v, want %d", got, n)
	}
	if got := s.Depth(); got != 0 {
		t.Errorf("Depth() after processing = %d, want 0", got)
	}
	if got := sample(t, e.reg, "wheelmq_actor_mailbox_depth", "alpha"); got != 0 {
		t.Errorf("mailbox_depth gauge after processing = %v, want 0", got)
	}
	if got := sample(t, e.reg, "wheelmq_actor_restarts_total", "alpha"); got != 0 {
		t.Errorf("restarts_total = %v, want 0", got)
	}
}

func TestStagesHaveSeparateSeries(t *testing.T) {
	e := newEnv(t)
	da, db := make(chan string, 10), make(chan string, 10)
	a, b := e.spawn(t, "a", da), e.spawn(t, "b", db)
	for i := 0; i < 3; i++ {
		a.Send(&job{id: "a"})
	}
	b.Send(&job{id: "b"})
	for i := 0; i < 3; i++ {
		recv(t, da, "enter a")
	}
	recv(t, db, "enter b")
	eventually(t, "both counters", func() bool {
		return sample(t, e.reg, "wheelmq_actor_messages_total", "a") == 3 &&
			sample(t, e.reg, "wheelmq_actor_messages_total", "b") == 1
	})
}

func TestRestartsCounted(t *testing.T) {
	e := newEnv(t)
	done := make(chan string, 10)
	s := e.spawn(t, "flaky", done)
	s.Send(&crash{})
	s.Send(&crash{})
	s.Send(&job{id: "after"})
	recv(t, done, "enter after")
	eventually(t, "the message after the crashes to be counted", func() bool {
		return sample(t, e.reg, "wheelmq_actor_messages_total", "flaky") == 1
	})
	if got := sample(t, e.reg, "wheelmq_actor_restarts_total", "flaky"); got != 2 {
		t.Errorf("restarts_total = %v, want 2", got)
	}
	// Failed messages are taken from the mailbox but not counted as processed.
	if got := s.Depth(); got != 0 {
		t.Errorf("Depth() = %d, want 0", got)
	}
	// An unknown id is ignored.
	e.metrics.Restarted("nobody")
	if got := sample(t, e.reg, "wheelmq_actor_restarts_total", "nobody"); got != -1 {
		t.Errorf("restarts_total{stage=nobody} = %v, want no series", got)
	}
}

func TestSpawnDuplicateName(t *testing.T) {
	e := newEnv(t)
	e.spawn(t, "dup", make(chan string, 1))
	_, err := e.metrics.Spawn(e.sys, e.strat, "dup", func(*stage.Stage) actor.Actor { return &worker{} })
	if err == nil {
		t.Fatal("second Spawn with the same name succeeded")
	}
}

func TestStopThenRespawnKeepsCounting(t *testing.T) {
	e := newEnv(t)
	done := make(chan string, 10)
	s, err := e.metrics.Spawn(e.sys, e.strat, "again", func(*stage.Stage) actor.Actor { return &worker{done: done} })
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&job{id: "1"})
	recv(t, done, "enter 1")
	s.Stop()
	s2 := e.spawn(t, "again", done)
	s2.Send(&job{id: "2"})
	recv(t, done, "enter 2")
	eventually(t, "counter across respawn", func() bool {
		return sample(t, e.reg, "wheelmq_actor_messages_total", "again") == 2
	})
}

func TestNewMetricsWithoutRegistry(t *testing.T) {
	m := stage.NewRegistry(nil)
	sys := stage.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	done := make(chan string, 1)
	s, err := m.Spawn(sys, supervisor.New(supervisor.Policy{}), "solo", func(*stage.Stage) actor.Actor { return &worker{done: done} })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	s.Send(&job{id: "1"})
	recv(t, done, "enter 1")
}

// selfSender sends to itself from Started, then reports what it got.
type selfSender struct {
	self *stage.Stage
	got  chan<- string
}

func (a *selfSender) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self.Send("from-started")
	case string:
		a.got <- m
	}
}

// TestSendFromStarted: a message a stage sends to itself from Started
// (which may run before Spawn returns) is delivered.
func TestSendFromStarted(t *testing.T) {
	sys := stage.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	reg := stage.NewRegistry(prometheus.NewRegistry())
	got := make(chan string, 4)
	s, err := reg.Spawn(sys, supervisor.New(supervisor.Policy{}), "early", func(self *stage.Stage) actor.Actor {
		return &selfSender{self: self, got: got}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	s.Send("from-outside")
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case m := <-got:
			seen[m] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("got only %v", seen)
		}
	}
	if s.PID() == nil {
		t.Error("no pid")
	}
}
