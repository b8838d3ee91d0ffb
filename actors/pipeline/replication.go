package pipeline

// Replication (issue 17, docs/replication; /work/notes/ha-contract.md): with
// Config.Replication = ReplicationController the broker follows a
// role.Holder the controller member sets. The pipeline then
//   - gives the writer the Holder, --min-in-sync-replicas and the
//     replication service's Confirmer (sends refused off-master, answers
//     held until confirmed);
//   - dispatches only up to Store.DurableEnd() (the confirmed offset), kicked
//     by the writer's confirmations and the receiver's appends
//     (ReplicationEnv.Kick);
//   - runs the role stage (role.go): promotion and demotion, the master-only
//     stages (transaction checks, retention), re-registration;
//   - exports the wheelmq_ha_* metrics (hametrics.go).
// With ReplicationNone nothing of it runs and the broker is as before.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
)

// ReplicationMode is --replication.
type ReplicationMode int

const (
	// ReplicationNone is a standalone broker (the default).
	ReplicationNone ReplicationMode = iota
	// ReplicationController is controller mode: a raft controller elects
	// the master; the CommitLog streams to the replicas.
	ReplicationController
)

// ParseReplicationMode parses "none" or "controller".
func ParseReplicationMode(s string) (ReplicationMode, error) {
	switch s {
	case "", "none":
		return ReplicationNone, nil
	case "controller":
		return ReplicationController, nil
	}
	return 0, fmt.Errorf("replication %q: want none or controller", s)
}

// String names the mode.
func (m ReplicationMode) String() string {
	if m == ReplicationController {
		return "controller"
	}
	return "none"
}

// EpochLog is the epoch file (storage/ha.Epochs): a promotion appends the
// new epoch and the CommitLog offset it starts at.
type EpochLog interface {
	Append(epoch, startOffset int64) error
}

// ReplicaLag is one replica as the master sees it (from
// replication.Service.Replicas).
type ReplicaLag struct {
	ReplicaID int64
	Addr      string
	LagBytes  int64
	InSync    bool
}

// ReplicationEnv is what Config.StartReplication gets: the open store, the
// broker's actor system and stage registry (the replication service's
// stages, ha-sender and ha-receiver, run there under the registry's
// metrics and health), the Holder, and the pipeline's hooks.
type ReplicationEnv struct {
	Store  *storage.Store
	System *actor.ActorSystem
	// Stages is the broker's stage registry (replication.Options.Stages).
	Stages *stage.Registry
	// Retire is the pipeline's hook for a stage stopped for good: it logs
	// it and the broker turns unhealthy (replication.Options.Retire).
	Retire func(id string, reason any) bool
	Role   *role.Holder
	Logger zerolog.Logger
	// Kick wakes the dispatcher (replication.Options.OnAppended on a
	// replica; the confirmed offset advanced).
	Kick func()
	// Cut drops the derived state at or above a CommitLog offset, after
	// the receiver truncated the log there (dispatch.Cut, then the timer
	// dequeue side: timer.Service.Truncated); done is called once, on the
	// dispatcher's or the timer stage's goroutine, and must not block.
	Cut func(above int64, done func(error))
}

// Replication is what the replication service gives the pipeline.
type Replication struct {
	// Confirmer holds send answers until confirmed (replication.Service).
	Confirmer writer.Confirmer
	// Durable is the confirmed offset (replication.Service implements
	// storage.DurableEnd): dispatch and checkpoints stop there.
	Durable storage.DurableEnd
	// Epochs is the epoch file (nil: not appended on promotion).
	Epochs EpochLog
	// Replicas, when set, lists the replicas' lag (metrics).
	Replicas func() []ReplicaLag
	// Stop stops the service; called before the store closes.
	Stop func(context.Context) error
	// Appended, when set, is called after every writer drain that
	// appended, and under sync flush also before its fsync
	// (replication.Service.Appended: wake the senders, recompute the
	// confirmed offset after a sync-flush fsync).
	Appended func()
}

// confirmerSlot is the writer's Confirmer before and after the service
// started: a wait before it is there is refused (not confirmed).
type confirmerSlot struct {
	c        atomic.Pointer[writer.Confirmer]
	appended atomic.Pointer[func()]
}

// wrote is the writer's Appended and Written hook in controller mode: the
// service's Appended once it runs.
func (s *confirmerSlot) wrote() {
	if f := s.appended.Load(); f != nil {
		(*f)()
	}
}

func (s *confirmerSlot) WaitConfirmed(end int64, done func(ok bool)) {
	if c := s.c.Load(); c != nil {
		(*c).WaitConfirmed(end, done)
		return
	}
	done(false)
}

// durableSlot is the store's DurableEnd in controller mode: the service's
// confirmed offset, or, before it is there, the position dispatched when
// the store opened (nothing more is exposed without a confirmation).
type durableSlot struct {
	d     atomic.Pointer[storage.DurableEnd]
	floor int64
}

func (s *durableSlot) DurableEnd() int64 {
	if d := s.d.Load(); d != nil {
		return max((*d).DurableEnd(), s.floor)
	}
	return s.floor
}

// replicated reports controller mode.
func (p *Pipeline) replicated() bool { return p.cfg.Replication == ReplicationController }

// Role is the broker's role holder (nil with ReplicationNone).
func (p *Pipeline) Role() *role.Holder { return p.role }

// initReplication readies controller mode before the stages spawn: the
// Holder, the Confirmer and DurableEnd slots. The service itself starts
// once the stages run (startReplication).
func (p *Pipeline) initReplication() {
	if !p.replicated() {
		return
	}
	p.role = p.cfg.Role
	if p.role == nil {
		p.role = role.NewHolder(role.State{Kind: role.Replica})
	}
	p.confirm = &confirmerSlot{}
	p.durable = &durableSlot{floor: p.store.Dispatched.Load()}
	p.store.SetDurableEnd(p.durable)
	if p.cfg.Registerer != nil {
		p.cfg.Registerer.MustRegister(newHACollector(p))
	}
}

// cutDerived drops what was derived from a truncated CommitLog tail: the
// consume-queue and index entries (dispatch.Cut), then the timer dequeue
// side's acknowledgements and scan positions (timer.Service.Truncated), so
// that timers this node fired from the cut tail are not taken as
// delivered and the new master's copies of them are found. done is called
// once with both results.
func (p *Pipeline) cutDerived(above int64, done func(error)) {
	p.Stage(dispatch.StageName).Send(&dispatch.Cut{Above: above, Reply: func(err error) {
		ts := p.timers.Load()
		if ts == nil {
			done(err)
			return
		}
		ts.Truncated(above, func(terr error) { done(errors.Join(err, terr)) })
	}})
}

// startReplication calls Config.StartReplication and plugs what it gives
// into the slots.
func (p *Pipeline) startReplication() error {
	if !p.replicated() || p.cfg.StartReplication == nil {
		return nil
	}
	env := ReplicationEnv{
		Store: p.store, System: p.system, Stages: p.stages, Retire: p.retire, Role: p.role,
		Logger: p.cfg.Logger.With().Str("component", "replication").Logger(),
		Kick:   p.kicker.Kick,
		Cut:    p.cutDerived,
	}
	r, err := p.cfg.StartReplication(env)
	if err != nil {
		return fmt.Errorf("broker start: replication: %w", err)
	}
	p.repl = r
	if r.Durable != nil {
		p.durable.d.Store(&r.Durable)
	}
	if r.Confirmer != nil {
		p.confirm.c.Store(&r.Confirmer)
	}
	if r.Appended != nil {
		p.confirm.appended.Store(&r.Appended)
	}
	p.kicker.Kick()
	return nil
}

// stopReplication stops the service (Shutdown, before the store closes).
func (p *Pipeline) stopReplication(ctx context.Context) error {
	if p.repl == nil || p.repl.Stop == nil {
		return nil
	}
	if err := p.repl.Stop(ctx); err != nil {
		return fmt.Errorf("stop replication: %w", err)
	}
	return nil
}

// writerReplication fills the writer's replication options.
func (p *Pipeline) writerReplication(o *writer.Options) {
	if !p.replicated() {
		return
	}
	o.Role, o.MinInSync, o.Confirmer = p.role, p.cfg.MinInSyncReplicas, p.confirm
	kick := o.Appended
	o.Appended = func() {
		p.confirm.wrote()
		kick()
	}
	o.OnConfirmed = p.kicker.Kick
	// Under sync flush the senders are woken before the master's fsync:
	// the replicas receive (and fsync) the batch in parallel with it.
	o.Written = p.confirm.wrote
}
