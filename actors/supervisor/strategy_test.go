package supervisor

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
)

var (
	errCorrupt   = errors.New("corrupt")
	errTransient = errors.New("transient")
)

func TestBackoffDoublesAndCaps(t *testing.T) {
	s := New(Policy{Initial: 10 * time.Millisecond, Max: 75 * time.Millisecond})
	tests := []struct {
		n    int
		want time.Duration
	}{
		{0, 10 * time.Millisecond},
		{1, 10 * time.Millisecond},
		{2, 20 * time.Millisecond},
		{3, 40 * time.Millisecond},
		{4, 75 * time.Millisecond},
		{5, 75 * time.Millisecond},
		{1000, 75 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := s.Backoff(tt.n); got != tt.want {
			t.Errorf("Backoff(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

func TestNewFillsDefaults(t *testing.T) {
	s := New(Policy{})
	d := DefaultPolicy()
	if s.policy.Initial != d.Initial || s.policy.Max != d.Max || s.policy.MaxRestarts != d.MaxRestarts ||
		s.policy.Window != d.Window {
		t.Fatalf("New(Policy{}) policy = %+v, want defaults %+v", s.policy, d)
	}
	if got := s.Backoff(1); got != 10*time.Millisecond {
		t.Errorf("Backoff(1) = %s, want 10ms", got)
	}
	if got := s.Backoff(30); got != 5*time.Second {
		t.Errorf("Backoff(30) = %s, want 5s", got)
	}
}

func TestDecide(t *testing.T) {
	s := New(Policy{Fatal: []error{errCorrupt}})
	tests := []struct {
		name   string
		reason any
		want   actor.Directive
	}{
		{"fatal itself", errCorrupt, actor.StopDirective},
		{"fatal wrapped", fmt.Errorf("read segment 3: %w", errCorrupt), actor.StopDirective},
		{"fatal wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", errCorrupt)), actor.StopDirective},
		{"fatal joined", errors.Join(errTransient, errCorrupt), actor.StopDirective},
		{"ErrFatal wrapped, not listed", fmt.Errorf("reopen store: %w: %w", ErrFatal, errTransient), actor.StopDirective},
		{"same text, other error", errors.New("corrupt"), actor.RestartDirective},
		{"transient", errTransient, actor.RestartDirective},
		{"string panic", "index out of range", actor.RestartDirective},
		{"nil", nil, actor.RestartDirective},
	}
	for _, tt := range tests {
		if got := s.Decide(tt.reason); got != tt.want {
			t.Errorf("%s: Decide(%v) = %v, want %v", tt.name, tt.reason, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want []string // substrings, one per reported problem
	}{
		{"defaults", DefaultPolicy(), nil},
		{"zero", Policy{}, []string{"Initial backoff", "MaxRestarts", "Window"}},
		{"max below initial", Policy{Initial: time.Second, Max: time.Millisecond, MaxRestarts: 1, Window: time.Second},
			[]string{"Max backoff 1ms is below Initial 1s"}},
		{"everything wrong", Policy{Initial: -1, Max: -2, MaxRestarts: -3, Window: -4},
			[]string{"Initial backoff", "Max backoff", "MaxRestarts must be > 0, got -3", "Window"}},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Validate() = nil, want %d problems", tt.name, len(tt.want))
			continue
		}
		joined, ok := err.(interface{ Unwrap() []error })
		if !ok {
			t.Fatalf("%s: Validate() returned %T, want a joined error", tt.name, err)
		}
		if got := len(joined.Unwrap()); got != len(tt.want) {
			t.Errorf("%s: %d problems reported (%v), want %d", tt.name, got, err, len(tt.want))
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", tt.name, err, w)
			}
		}
	}
}

func TestRecordFailureWindow(t *testing.T) {
	s := New(Policy{Window: time.Minute})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		child string
		at    time.Duration
		want  int
	}{
		{"a", 0, 1},
		{"a", 30 * time.Second, 2},
		{"b", 30 * time.Second, 1},
		{"a", 60 * time.Second, 3},            // t0 is exactly Window old: still counted
		{"a", 61 * time.Second, 3},            // t0 dropped
		{"a", 200 * time.Second, 1},           // everything older than a minute dropped
		{"b", 200*time.Second + time.Hour, 1}, // b's old failure dropped
	}
	for i, st := range steps {
		if got := s.recordFailure(st.child, t0.Add(st.at)); got != st.want {
			t.Errorf("step %d: recordFailure(%s, +%s) = %d, want %d", i, st.child, st.at, got, st.want)
		}
	}
}

// probe is an actor that reports its lifecycle and panics on demand.
type probe struct {
	gen     int
	events  chan string
	started *atomic.Int32
}

type fail struct{ reason any }
type ping struct{ reply chan int }

func (p *probe) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.gen = int(p.started.Add(1))
		p.events <- "started"
	case *actor.Stopped:
		p.events <- "stopped"
	case *fail:
		panic(m.reason)
	case *ping:
		m.reply <- p.gen
	}
}

// harness runs one probe stage under a Strategy built from policy.
type harness struct {
	st       *stage.Stage
	events   chan string
	started  atomic.Int32
	restarts atomic.Int32
	mu       sync.Mutex
	stops    []any // reasons passed to OnStop
}

func startProbe(t *testing.T, p Policy) *harness {
	t.Helper()
	h := &harness{events: make(chan string, 64)}
	p.OnRestart = func(id string) {
		if id != "probe" {
			t.Errorf("OnRestart(%q), want probe", id)
		}
		h.restarts.Add(1)
	}
	p.OnStop = func(id string, reason any) {
		h.mu.Lock()
		h.stops = append(h.stops, reason)
		h.mu.Unlock()
	}
	sys := stage.NewSystem(zerolog.Nop())
	m := stage.NewRegistry(prometheus.NewRegistry())
	st, err := m.Spawn(sys, New(p), "probe", func(*stage.Stage) actor.Actor {
		return &probe{events: h.events, started: &h.started}
	})
	if err != nil {
		t.Fatal(err)
	}
	h.st = st
	t.Cleanup(func() {
		st.Stop()
		sys.Shutdown()
	})
	h.expect(t, "started")
	return h
}

// expect waits for the next lifecycle event and checks it.
func (h *harness) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-h.events:
		if got != want {
			t.Fatalf("event %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no %q event within 5s", want)
	}
}

// ping returns the generation of the instance that answered.
func (h *harness) ping(t *testing.T) int {
	t.Helper()
	reply := make(chan int, 1)
	h.st.Send(&ping{reply: reply})
	select {
	case g := <-reply:
		return g
	case <-time.After(5 * time.Second):
		t.Fatal("no ping reply within 5s")
		return 0
	}
}

func (h *harness) stopReasons() []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]any(nil), h.stops...)
}

func TestPanicsRestartThenFatalStops(t *testing.T) {
	h := startProbe(t, Policy{Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond, MaxRestarts: 10,
		Window: time.Minute, Fatal: []error{errCorrupt}})
	const n = 3
	begin := time.Now()
	for i := 0; i < n; i++ {
		h.st.Send(&fail{reason: fmt.Errorf("attempt %d: %w", i, errTransient)})
	}
	for i := 0; i < n; i++ {
		h.expect(t, "started")
	}
	// Backoffs 20 + 40 + 40 ms (capped) must have been honoured.
	if el := time.Since(begin); el < 100*time.Millisecond {
		t.Errorf("%d restarts took %s, want >= 100ms of backoff", n, el)
	}
	if got := h.restarts.Load(); got != n {
		t.Errorf("OnRestart called %d times, want %d", got, n)
	}
	if g := h.ping(t); g != n+1 {
		t.Errorf("ping answered by instance %d, want fresh instance %d", g, n+1)
	}

	h.st.Send(&fail{reason: fmt.Errorf("segment 7: %w", errCorrupt)})
	h.expect(t, "stopped")
	reasons := h.stopReasons()
	if len(reasons) != 1 {
		t.Fatalf("OnStop called %d times, want 1", len(reasons))
	}
	if err, ok := reasons[0].(error); !ok || !errors.Is(err, errCorrupt) {
		t.Errorf("OnStop reason = %v, want the corrupt error", reasons[0])
	}
	if got := h.restarts.Load(); got != n {
		t.Errorf("OnRestart called %d times after a fatal failure, want still %d", got, n)
	}
	if got := h.started.Load(); got != n+1 {
		t.Errorf("%d instances started, want %d (no restart after the fatal failure)", got, n+1)
	}
}

func TestTooManyRestartsStops(t *testing.T) {
	h := startProbe(t, Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxRestarts: 2,
		Window: time.Minute})
	for i := 0; i < 3; i++ {
		h.st.Send(&fail{reason: "boom"})
	}
	h.expect(t, "started")
	h.expect(t, "started")
	h.expect(t, "stopped")
	if got := h.restarts.Load(); got != 2 {
		t.Errorf("OnRestart called %d times, want 2", got)
	}
	reasons := h.stopReasons()
	if len(reasons) != 1 || reasons[0] != "boom" {
		t.Errorf("OnStop reasons = %v, want [boom]", reasons)
	}
}
