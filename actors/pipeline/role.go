package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// RoleStageName is the role stage's stable name.
const RoleStageName = "ha-role"

// masterStages are the stages only a master runs (the timer dequeue and
// retention's rolling follow the Holder themselves; retention deletes on
// every node).
var masterStages = []string{txcheck.StageName}

// roleChanged is sent by the Holder's subscriber (which must not block):
// the stage looks at the current state itself.
type roleChanged struct{}

// promoted is the writer's answer to a Promote.
type promoted struct {
	epoch int64
	began time.Time
	err   error
}

// roleActor drives promotion and demotion from role.Holder changes, in
// a supervised stage (never in the subscriber callback):
//
//   - to master at epoch E (unfenced): cut the CommitLog to its last whole
//     record, append (E, end) to the epoch file, have the writer rebuild its
//     queue-offset table (writer.Promote: sends are refused until then),
//     start the master-only stages, register as brokerId 0 with E;
//   - to replica, or fenced: stop the master-only stages, register with the
//     replica id (the writer refuses sends by itself: it reads the Holder).
type roleActor struct {
	p         *Pipeline
	self      *stage.Stage
	log       zerolog.Logger
	promoting bool
	running   bool // the master-only stages run
	retry     *stage.Timer
}

func (p *Pipeline) roleProducer() stage.Producer {
	return func(self *stage.Stage) actor.Actor {
		return &roleActor{p: p, self: self, log: p.cfg.Logger.With().Str("stage", RoleStageName).Logger(),
			retry: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (a *roleActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.running = a.p.masterStagesRunning()
		a.evaluate()
	case roleChanged:
		a.evaluate()
	case *promoted:
		a.promoting = false
		if m.err != nil {
			a.log.Error().Err(m.err).Int64("epoch", m.epoch).Msg("promotion failed; retrying")
			a.retry.Arm(100*time.Millisecond, roleChanged{})
			return
		}
		a.p.promotedEpoch.Store(m.epoch + 1)
		a.log.Info().Int64("epoch", m.epoch).Dur("took", time.Since(m.began)).Msg("promoted to master")
		a.evaluate()
	case *actor.Stopping, *actor.Restarting:
		a.retry.Stop()
	}
}

// evaluate brings the broker in line with the Holder's current state.
func (a *roleActor) evaluate() {
	st := a.p.role.Get()
	master := st.Kind == role.Master && !st.Fenced
	switch {
	case master && a.p.promotedEpoch.Load() != st.Epoch+1:
		if !a.promoting {
			a.promote(st.Epoch)
		}
		return // the master-only stages start once promoted
	case master:
		if !a.running {
			a.running = true
			if err := a.p.startMasterStages(st.Epoch); err != nil {
				a.log.Error().Err(err).Msg("master-only stages did not start")
			}
		} else if e := a.p.Pop(); e != nil && e.Modes().ReloadedFor() != st.Epoch {
			// Master all along, at a new epoch: the POP engine's state is
			// the group's already (no Reload), pulls and pops need not wait.
			e.Modes().MarkReloaded(st.Epoch)
		}
	case a.running:
		a.running = false
		a.p.stopMasterStages()
		a.log.Info().Str("role", st.Kind.String()).Bool("fenced", st.Fenced).Int64("epoch", st.Epoch).
			Msg("master-only stages stopped")
	}
	a.p.regKicker.Kick() // brokerId and epoch from the Holder
}

// promote cuts the log, appends the epoch, and asks the writer to rebuild.
func (a *roleActor) promote(epoch int64) {
	began := time.Now()
	end, err := a.p.cutToWholeRecord()
	if err == nil && a.p.repl != nil && a.p.repl.Epochs != nil {
		err = appendEpoch(a.p.repl.Epochs, epoch, end)
	}
	if err != nil {
		a.self.Send(&promoted{epoch: epoch, began: began, err: err})
		return
	}
	a.promoting = true
	a.log.Info().Int64("epoch", epoch).Int64("commitlog_end", end).Msg("promoting: log cut to its last whole record, epoch appended")
	self := a.self
	w := a.p.Stage(writer.StageName)
	w.Send(&writer.Promote{Epoch: epoch, Done: func(err error) {
		self.Send(&promoted{epoch: epoch, began: began, err: err})
	}})
}

// appendEpoch appends (epoch, end) unless the file already has epoch (a
// broker restarted as master at the same epoch): an EpochLog that also
// has LastEpoch() int64 is asked first.
func appendEpoch(e EpochLog, epoch, end int64) error {
	if l, ok := e.(interface{ LastEpoch() int64 }); ok && l.LastEpoch() >= epoch {
		return nil
	}
	if err := e.Append(epoch, end); err != nil {
		return fmt.Errorf("epoch file append (%d, %d): %w", epoch, end, err)
	}
	return nil
}

// truncater is commitlog.CommitLog's Truncate (H-stream).
type truncater interface{ Truncate(offset int64) error }

// cutToWholeRecord truncates the CommitLog after its last whole record (a
// replica may hold a record's head the old master never finished sending)
// and returns the end. It scans from the dispatched position (everything
// below was read whole).
func (p *Pipeline) cutToWholeRecord() (int64, error) {
	cl := p.store.CommitLog
	off := max(p.store.Dispatched.Load(), cl.MinOffset())
	for {
		_, next, err := cl.Read(off)
		if errors.Is(err, io.EOF) || errors.Is(err, commitlog.ErrCorrupt) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("promotion: read commitlog at %d: %w", off, err)
		}
		off = next
	}
	if end := cl.MaxOffset(); off < end {
		t, ok := any(cl).(truncater)
		if !ok {
			return 0, fmt.Errorf("promotion: commitlog holds a partial record at %d..%d and cannot truncate", off, end)
		}
		if err := t.Truncate(off); err != nil {
			return 0, fmt.Errorf("promotion: truncate commitlog to %d: %w", off, err)
		}
		p.cfg.Logger.Warn().Int64("from", end).Int64("to", off).Msg("promotion: partial record cut from the commitlog tail")
	}
	return off, nil
}

// masterStagesRunning reports whether the master-only stages run.
func (p *Pipeline) masterStagesRunning() bool {
	for _, name := range masterStages {
		if s := p.Stage(name); s == nil || s.Stopped() {
			return false
		}
	}
	return true
}

// startMasterStages spawns the master-only stages not running, as master
// at epoch.
func (p *Pipeline) startMasterStages(epoch int64) error {
	var errs []error
	if s := p.Stage(pop.StageName); s != nil {
		s.Send(&pop.Reload{Epoch: epoch}) // the old master's POP journal is in the CommitLog
	}
	if s := p.Stage(txcheck.StageName); s == nil || s.Stopped() {
		if _, err := p.spawnStage(txcheck.StageName, p.txcheckProducer()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopMasterStages stops them (each within Config.StopStageTimeout).
func (p *Pipeline) stopMasterStages() {
	p.stopStages(context.Background(), masterStages)
}
