package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/acl"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/index"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/registrar"
	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/actors/writer"
)

// A broker stops in this order (cmd/internal/process runs it; see
// docs/operations.md, "Stopping"):
//
//  1. the network refuses new requests (netloop.Server.Refuse);
//  2. Drain: the stages that make work of their own stop (retention, the
//     timer stages, then the wheel is flushed; the registrar, which
//     unregisters from the name servers), the others answer what they
//     hold (Drain waits until they are quiet), then the pull stage stops
//     and answers its parked pulls;
//  3. the network writes every answer out and closes the connections;
//  4. Shutdown: every stage left stops in dependency order, each
//     persisting its state, and a store is closed only once every stage
//     that uses it has confirmed it stopped. A stage that does not stop in
//     time is logged by name and what it uses is left open for the
//     process exit, instead of being closed under it.

// Defaults of Config.DrainTimeout and Config.StopStageTimeout.
const (
	defaultDrainTimeout     = 10 * time.Second
	defaultStopStageTimeout = 5 * time.Second
)

// quietPoll is how often Drain looks at the stages.
const quietPoll = 2 * time.Millisecond

// ErrStagesStuck matches the error of a Shutdown that left stages running.
var ErrStagesStuck = errors.New("stages did not stop in time")

// stuckStages are the stages that did not stop in time.
type stuckStages struct {
	mu    sync.Mutex
	names []string // guarded by mu
}

func (s *stuckStages) add(name string) {
	s.mu.Lock()
	if !slices.Contains(s.names, name) {
		s.names = append(s.names, name)
	}
	s.mu.Unlock()
}

// among returns those of names that are stuck.
func (s *stuckStages) among(names []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range names {
		if slices.Contains(s.names, n) {
			out = append(out, n)
		}
	}
	return out
}

func (s *stuckStages) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.names)
}

// workStages make work of their own (ticks, timers coming due, deletion
// rounds, registrations): Drain stops them first, so that what is left is
// the stages that serve requests.
func workStages() []string {
	return append(append([]string{RoleStageName, retention.StageName}, timer.StageNames()...), registrar.StageName)
}

// requestStages serve requests, in the order Shutdown stops them: those
// that feed the writer first, the writer before dispatch and the index
// (which read what it wrote), the tables last.
var requestStages = append(append([]string{stats.StageName, txcheck.StageName, clients.StageName}, pullStages()...),
	writer.StageName, dispatch.StageName, index.StageName, offsets.StageName, groups.StageName, topics.StageName, acl.StageName)

// pullStages are the pull stage and its readers (up to pull.MaxReaders), in
// the order they stop: the pull stage answers its parked pulls and hands
// nothing more to the readers.
func pullStages() []string {
	names := []string{pull.StageName}
	for i := range pull.MaxReaders {
		names = append(names, pull.ReaderName(i))
	}
	return names
}

// stopOrder is every stage in the order they stop.
func (p *Pipeline) stopOrder() []string { return append(workStages(), requestStages...) }

// storeUsers are the stages that read or write the store (CommitLog,
// consume queues); wheelUsers those that use the timer store.
func storeUsers() []string {
	return append(append([]string{writer.StageName, dispatch.StageName, index.StageName,
		txcheck.StageName, retention.StageName}, pullStages()...), timer.StageNames()...)
}

func wheelUsers() []string {
	return append([]string{retention.StageName, stats.StageName}, timer.StageNames()...)
}

// Drain stops the stages that make work of their own and waits, at most
// Config.DrainTimeout (and ctx), until the stages that serve requests have
// answered everything they were given; then it stops the pull stage, which
// answers its parked pulls. Call it once the network refuses new requests
// and before it closes the connections, so that the answers reach the
// clients: a send the writer stored is answered with its result, not lost
// with its connection. It returns an error naming the stages still busy at
// the deadline (the stop goes on).
func (p *Pipeline) Drain(ctx context.Context) error {
	p.stopStages(ctx, workStages())
	dctx, cancel := context.WithTimeout(ctx, orDefault(p.cfg.DrainTimeout, defaultDrainTimeout))
	defer cancel()
	var watch []*stage.Stage
	for _, name := range requestStages {
		if s := p.Stage(name); s != nil && !s.Stopped() {
			watch = append(watch, s)
		}
	}
	err := p.waitQuiet(dctx, watch)
	p.stopStages(ctx, pullStages())
	return err
}

// waitQuiet waits until stage.Quiet finds none of stages with work, or ctx
// ends.
func (p *Pipeline) waitQuiet(ctx context.Context, stages []*stage.Stage) error {
	tick := time.NewTicker(quietPoll)
	defer tick.Stop()
	began := time.Now()
	for {
		busy := stage.Quiet(stages)
		if len(busy) == 0 {
			p.cfg.Logger.Info().Dur("waited", time.Since(began)).Msg("stages drained: every request they held is answered")
			return nil
		}
		select {
		case <-ctx.Done():
			p.cfg.Logger.Error().Strs("busy", busy).Dur("waited", time.Since(began)).
				Msg("stages still busy at the drain deadline: what they hold may go unanswered")
			return fmt.Errorf("drain: stages %v still busy: %w", busy, ctx.Err())
		case <-tick.C:
		}
	}
}

// Shutdown stops every stage still running in dependency order (each
// persists its state when it stops), waiting at most
// Config.StopStageTimeout for each (and ctx for all), then closes the timer
// store and the store, each only if every stage that uses it stopped. A
// stage that did not stop in time is logged by name; the stores it uses
// stay open (the process exit closes them) and the error, which wraps
// ErrStagesStuck, names it. Later calls return nil.
func (p *Pipeline) Shutdown(ctx context.Context) error {
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	p.stopStages(ctx, p.stopOrder())
	var errs []error
	if err := p.stopReplication(ctx); err != nil {
		errs = append(errs, err)
	}
	if stuck := p.stuck.among(wheelUsers()); len(stuck) > 0 {
		p.cfg.Logger.Error().Strs("stages", stuck).Msg("timer store left open: stages using it did not stop")
	} else if err := p.wheel.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close timer store: %w", err))
	}
	if stuck := p.stuck.among(storeUsers()); len(stuck) > 0 {
		p.cfg.Logger.Error().Strs("stages", stuck).Msg("store left open: stages using it did not stop")
	} else if err := p.store.Close(); err != nil {
		errs = append(errs, err)
	}
	if stuck := p.stuck.all(); len(stuck) > 0 {
		errs = append(errs, fmt.Errorf("pipeline shutdown: %v: %w", stuck, ErrStagesStuck))
	} else {
		p.system.Shutdown()
	}
	return errors.Join(errs...)
}

// Close is Shutdown without a deadline of the caller's (each stage still
// gets Config.StopStageTimeout).
func (p *Pipeline) Close() error { return p.Shutdown(context.Background()) }

// stopStages stops the named stages in order (names without a stage, and
// stopped ones, are skipped). After the timer stages it flushes the wheel
// if they all stopped.
func (p *Pipeline) stopStages(ctx context.Context, names []string) {
	timers, timersStopped := false, true
	for _, name := range names {
		s := p.Stage(name)
		if s == nil || s.Stopped() {
			continue
		}
		ok := p.stopStage(ctx, s)
		if slices.Contains(timer.StageNames(), name) {
			timers = true
			timersStopped = timersStopped && ok
		}
	}
	if ts := p.timers.Load(); timers && ts != nil {
		if timersStopped {
			ts.Stop() // every timer stage is gone: this only flushes the wheel
		} else {
			p.cfg.Logger.Error().Msg("timer stages did not all stop: the wheel is not flushed (its last 20 ms are replayed at start)")
		}
	}
}

// stopStage stops one stage within Config.StopStageTimeout and reports
// whether it stopped; one that did not is logged and remembered.
func (p *Pipeline) stopStage(ctx context.Context, s *stage.Stage) bool {
	ctx, cancel := context.WithTimeout(ctx, orDefault(p.cfg.StopStageTimeout, defaultStopStageTimeout))
	defer cancel()
	began := time.Now()
	if err := s.StopWithin(ctx); err != nil {
		p.stuck.add(s.Name())
		p.cfg.Logger.Error().Str("stage", s.Name()).Dur("waited", time.Since(began)).Err(err).
			Msg("stage did not stop in time: the stores it uses are left open for the process exit")
		return false
	}
	return true
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
