// Package supervisor is wheelmq's written restart policy for its actors.
//
// Every pipeline stage (CommitLog writer, consume-queue dispatcher, pull
// service, client manager, timer stages, ...) is spawned under a guardian
// that uses Strategy. When a stage panics, protoactor-go suspends its mailbox
// and asks the strategy what to do:
//
//   - the Decider maps the failure reason (the recovered panic value) to a
//     directive: reasons that match one of Policy.Fatal (corruption) stop the
//     stage; everything else (transient I/O, bugs) restarts it;
//   - a restart is delayed by a capped exponential backoff
//     (Initial, 2*Initial, 4*Initial, ... up to Max) so that a stage that
//     fails on every attempt does not spin;
//   - more than MaxRestarts failures inside Window stop the stage for good.
//
// A restarted stage is a fresh actor instance: it rebuilds its state from
// storage in its *actor.Started handler and resumes from its persisted
// offset, so nothing is lost; messages that queued up while it was down are
// processed after the restart. The message being processed when the stage
// failed is dropped by protoactor, so stages that must not lose a request
// (the CommitLog writer) answer errors instead of panicking.
package supervisor

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// ErrFatal marks a failure that a restart cannot fix (for example a store
// that could not be reopened): a stage that panics with an error wrapping it
// is stopped for good whatever Policy.Fatal lists.
var ErrFatal = errors.New("fatal")

// Policy configures Strategy.
type Policy struct {
	// Initial is the delay before the first restart (default 10 ms).
	Initial time.Duration
	// Max caps the delay between restarts (default 5 s).
	Max time.Duration
	// MaxRestarts is how many failures within Window are tolerated before the
	// stage is stopped (default 20).
	MaxRestarts int
	// Window is the period over which failures are counted (default 1 min).
	Window time.Duration
	// Fatal lists error classes that stop a stage instead of restarting it
	// (matched with errors.Is against a panic value that is an error).
	Fatal []error
	// Logger receives one event per failure.
	Logger zerolog.Logger
	// OnRestart, when set, is called with the child's id after each restart
	// is scheduled (used for the restarts metric).
	OnRestart func(childID string)
	// OnStop, when set, is called with the child's id when a stage is
	// stopped for good.
	OnStop func(childID string, reason any)
	// Retire, when set, is asked first when a stage is stopped for good;
	// when it returns true the stage layer has taken the stage over
	// (stage.Registry.Retire) and the child is restarted into its retired
	// form, which answers every request it still holds with an error,
	// instead of being stopped with its mailbox silently discarded.
	Retire func(childID string, reason any) bool
}

// DefaultPolicy returns the production defaults.
func DefaultPolicy() Policy {
	return Policy{Initial: 10 * time.Millisecond, Max: 5 * time.Second, MaxRestarts: 20, Window: time.Minute}
}

// Validate reports every problem with p at once.
func (p Policy) Validate() error {
	var errs []error
	if p.Initial <= 0 {
		errs = append(errs, fmt.Errorf("supervisor: Initial backoff must be > 0, got %s", p.Initial))
	}
	if p.Max < p.Initial {
		errs = append(errs, fmt.Errorf("supervisor: Max backoff %s is below Initial %s", p.Max, p.Initial))
	}
	if p.MaxRestarts <= 0 {
		errs = append(errs, fmt.Errorf("supervisor: MaxRestarts must be > 0, got %d", p.MaxRestarts))
	}
	if p.Window <= 0 {
		errs = append(errs, fmt.Errorf("supervisor: Window must be > 0, got %s", p.Window))
	}
	return errors.Join(errs...)
}

// Strategy is a protoactor SupervisorStrategy implementing Policy.
type Strategy struct {
	policy Policy
	mu     sync.Mutex
	// failures holds recent failure times per child id (guarded by mu).
	failures map[string][]time.Time
}

var _ actor.SupervisorStrategy = (*Strategy)(nil)

// New returns a strategy for p. Zero fields of p take DefaultPolicy values.
func New(p Policy) *Strategy {
	d := DefaultPolicy()
	if p.Initial <= 0 {
		p.Initial = d.Initial
	}
	if p.Max <= 0 {
		p.Max = d.Max
	}
	if p.MaxRestarts <= 0 {
		p.MaxRestarts = d.MaxRestarts
	}
	if p.Window <= 0 {
		p.Window = d.Window
	}
	return &Strategy{policy: p, failures: map[string][]time.Time{}}
}

// Decide maps a failure reason to a directive: Stop for ErrFatal and the
// Fatal classes, Restart otherwise.
func (s *Strategy) Decide(reason any) actor.Directive {
	if err, ok := reason.(error); ok {
		if errors.Is(err, ErrFatal) {
			return actor.StopDirective
		}
		for _, fatal := range s.policy.Fatal {
			if errors.Is(err, fatal) {
				return actor.StopDirective
			}
		}
	}
	return actor.RestartDirective
}

// Backoff returns the delay before restart number n (1-based).
func (s *Strategy) Backoff(n int) time.Duration {
	d := s.policy.Initial
	for i := 1; i < n && d < s.policy.Max; i++ {
		d *= 2
	}
	if d > s.policy.Max {
		d = s.policy.Max
	}
	return d
}

// recordFailure notes a failure of child at now and returns how many
// failures fall inside the window.
func (s *Strategy) recordFailure(child string, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.failures[child][:0]
	for _, t := range s.failures[child] {
		if now.Sub(t) <= s.policy.Window {
			kept = append(kept, t)
		}
	}
	kept = append(kept, now)
	s.failures[child] = kept
	return len(kept)
}

// HandleFailure implements actor.SupervisorStrategy.
func (s *Strategy) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	_ *actor.RestartStatistics, reason any, message any) {
	id := child.Id
	log := s.policy.Logger.With().Str("stage", id).Str("reason", fmt.Sprint(reason)).
		Str("message_type", fmt.Sprintf("%T", message)).Logger()
	if s.Decide(reason) == actor.StopDirective {
		log.Error().Msg("stage failed with a fatal error; stopping it")
		s.stop(system, sup, child, reason)
		return
	}
	n := s.recordFailure(id, time.Now())
	if n > s.policy.MaxRestarts {
		log.Error().Int("failures", n).Dur("window", s.policy.Window).Msg("stage keeps failing; stopping it")
		s.stop(system, sup, child, reason)
		return
	}
	delay := s.Backoff(n)
	log.Warn().Int("failures", n).Dur("backoff", delay).Msg("stage failed; restarting it")
	if s.policy.OnRestart != nil {
		s.policy.OnRestart(id)
	}
	time.AfterFunc(delay, func() {
		system.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: actor.RestartDirective})
		sup.RestartChildren(child)
	})
}

func (s *Strategy) stop(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, reason any) {
	system.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: actor.StopDirective})
	if s.policy.OnStop != nil {
		s.policy.OnStop(child.Id, reason)
	}
	if s.policy.Retire != nil && s.policy.Retire(child.Id, reason) {
		sup.RestartChildren(child)
		return
	}
	sup.StopChildren(child)
}
