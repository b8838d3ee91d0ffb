package stage_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
)

type drain struct{}

// batcher serves requests from an inbox, recording each batch's size.
type batcher struct {
	in      *stage.Inbox[*request]
	batches chan int
	buf     []*request
}

func (b *batcher) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		b.in.Rekick()
	case drain:
		for {
			b.buf = b.in.Take(b.buf[:0])
			if len(b.buf) == 0 {
				return
			}
			b.batches <- len(b.buf)
			for _, r := range b.buf {
				if r.gate != nil {
					<-r.gate
				}
				if r.crash != nil {
					panic(r.crash)
				}
				r.answer <- nil
			}
		}
	}
}

func spawnBatcher(t *testing.T) (*stage.Stage, *stage.Inbox[*request], chan int, *prometheus.Registry) {
	t.Helper()
	sys := stage.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	reg := prometheus.NewRegistry()
	stages := stage.NewRegistry(reg)
	strat := supervisor.New(supervisor.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxRestarts: 10, Window: time.Minute,
		Fatal: []error{errFatal}, OnRestart: stages.Restarted, Retire: stages.Retire})
	in := stage.NewInbox[*request](drain{})
	batches := make(chan int, 1000)
	s, err := stages.Spawn(sys, strat, "svc", func(self *stage.Stage) actor.Actor {
		in.Bind(self)
		return &batcher{in: in, batches: batches}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s, in, batches, reg
}

func TestInboxBatchesWhatArrivesMeanwhile(t *testing.T) {
	s, in, batches, reg := spawnBatcher(t)
	gate := make(chan struct{})
	first := &request{gate: gate, answer: make(chan error, 1)}
	in.Push(first)
	if n := <-batches; n != 1 {
		t.Fatalf("first batch of %d", n)
	}
	// The actor is busy with the first request: these queue up.
	var rest []*request
	for range 50 {
		r := newRequest()
		rest = append(rest, r)
		in.Push(r)
	}
	if d := s.Depth(); d < 50 {
		t.Fatalf("depth %d with 50 queued", d)
	}
	close(gate)
	if n := <-batches; n != 50 {
		t.Fatalf("second batch of %d, want the 50 queued meanwhile", n)
	}
	for _, r := range append(rest, first) {
		if err := answerOf(t, r); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "depth back to 0", func() bool { return s.Depth() == 0 })
	if v := sample(t, reg, "wheelmq_actor_messages_total", "svc"); v < 51 {
		t.Fatalf("messages_total %v, want at least the 51 requests", v)
	}
}

func TestInboxConcurrentPushesAllServed(t *testing.T) {
	_, in, _, _ := spawnBatcher(t)
	var wg sync.WaitGroup
	reqs := make([]*request, 8*500)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				r := newRequest()
				reqs[g*500+i] = r
				in.Push(r)
			}
		}()
	}
	wg.Wait()
	for _, r := range reqs {
		if err := answerOf(t, r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInboxAfterARestartAndWhenDown(t *testing.T) {
	s, in, batches, _ := spawnBatcher(t)
	gate := make(chan struct{})
	crash := &request{gate: gate, crash: errors.New("transient"), answer: make(chan error, 1)}
	in.Push(crash)
	<-batches
	queued := newRequest()
	in.Push(queued) // waits in the inbox while the actor crashes
	close(gate)
	// The kick of the crashed batch is gone; the restarted instance's
	// Rekick takes the queued request.
	if err := answerOf(t, queued); err != nil {
		t.Fatalf("request queued across a restart: %v", err)
	}
	<-batches // the restarted instance's batch
	gate = make(chan struct{})
	fatal := &request{gate: gate, crash: errFatal, answer: make(chan error, 1)}
	in.Push(fatal)
	if n := <-batches; n != 1 {
		t.Fatalf("batch of %d, want the fatal request alone", n)
	}
	waiting := []*request{newRequest(), newRequest()}
	for _, r := range waiting {
		in.Push(r)
	}
	close(gate)
	for i, r := range waiting {
		if err := answerOf(t, r); !errors.Is(err, stage.ErrDown) {
			t.Fatalf("request %d queued when the stage went down: %v, want a stage-down error", i, err)
		}
	}
	later := newRequest()
	in.Push(later)
	if err := answerOf(t, later); !errors.Is(err, stage.ErrDown) {
		t.Fatalf("push to a retired stage: %v", err)
	}
	if d := s.Depth(); d != 0 {
		t.Fatalf("depth %d after everything was failed", d)
	}
}

func TestInboxUnboundFailsAtOnce(t *testing.T) {
	in := stage.NewInbox[*request](drain{})
	r := newRequest()
	in.Push(r)
	if err := answerOf(t, r); !errors.Is(err, stage.ErrUnbound) {
		t.Fatalf("push before Bind: %v", err)
	}
}
