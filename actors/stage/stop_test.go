package stage_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
)

func TestStopWithinStopsAnIdleStage(t *testing.T) {
	e := newEnv(t)
	done := make(chan string, 10)
	s := e.spawn(t, "idle", done)
	s.Send(&job{id: "1"})
	recv(t, done, "enter 1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.StopWithin(ctx); err != nil {
		t.Fatalf("StopWithin: %v", err)
	}
	if !s.Stopped() {
		t.Fatal("Stopped is false after StopWithin returned nil")
	}
	if err := s.StopWithin(ctx); err != nil { // again: at once
		t.Fatalf("second StopWithin: %v", err)
	}
}

func TestStopWithinTimesOutOnAStuckStage(t *testing.T) {
	e := newEnv(t)
	done := make(chan string, 10)
	s := e.spawn(t, "stuck", done)
	gate := make(chan struct{})
	s.Send(&job{id: "1", gate: gate})
	recv(t, done, "enter 1")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.StopWithin(ctx)
	if !errors.Is(err, stage.ErrStopTimeout) {
		t.Fatalf("StopWithin on a stuck stage: %v, want ErrStopTimeout", err)
	}
	if s.Stopped() {
		t.Fatal("a stage stuck in a message reports Stopped")
	}
	close(gate) // the message ends: the stop that was asked for goes through
	eventually(t, "the stage stops once its message ends", s.Stopped)
}

func TestRestartIsNotAStop(t *testing.T) {
	e := newEnv(t)
	done := make(chan string, 10)
	s := e.spawn(t, "phoenix", done)
	s.Send(&crash{})
	s.Send(&job{id: "after"})
	recv(t, done, "enter after")
	if s.Stopped() {
		t.Fatal("a restarted stage reports Stopped")
	}
}

// relay forwards every job to the next stage (when it has one) while it
// holds it.
type relay struct {
	next *stage.Stage
	seen chan<- string
}

func (r *relay) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*job); ok {
		if m.gate != nil {
			<-m.gate
		}
		if r.next != nil {
			r.next.Send(&job{id: m.id})
		}
		r.seen <- m.id
	}
}

func TestQuietSeesWorkAlongAChain(t *testing.T) {
	e := newEnv(t)
	seen := make(chan string, 10)
	spawn := func(name string, next *stage.Stage) *stage.Stage {
		s, err := e.metrics.Spawn(e.sys, e.strat, name, func(*stage.Stage) actor.Actor { return &relay{next: next, seen: seen} })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		return s
	}
	last := spawn("last", nil)
	first := spawn("first", last)
	stages := []*stage.Stage{last, first} // the receiver looked at before the sender
	if busy := stage.Quiet(stages); len(busy) != 0 {
		t.Fatalf("fresh stages report work: %v", busy)
	}
	gate := make(chan struct{})
	first.Send(&job{id: "1", gate: gate})
	eventually(t, "the first stage busy", func() bool { return slices.Contains(stage.Quiet(stages), "first") })
	close(gate)
	for range 2 {
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			t.Fatal("the job did not go down the chain")
		}
	}
	eventually(t, "quiet once the chain is done", func() bool { return len(stage.Quiet(stages)) == 0 })
	// Queued but not started counts as work.
	gate = make(chan struct{})
	last.Send(&job{id: "2", gate: gate})
	last.Send(&job{id: "3"})
	eventually(t, "the queued job seen", func() bool { return slices.Equal(stage.Quiet(stages), []string{"last"}) })
	close(gate)
	eventually(t, "quiet again", func() bool { return len(stage.Quiet(stages)) == 0 })
}
