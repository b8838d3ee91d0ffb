package timer

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// flushTick is timer_flush's periodic tick.
type flushTick struct{}

// flushed tells dequeue_put that the replay checkpoint now says from.
type flushed struct{ from int64 }

// timerFlush makes the wheel's changes durable (timerwheel.Store.Flush:
// TimerLog, snapshot, checkpoint), then records where dequeue_put's replay
// scan starts (ReplayCheckpointKey). It is a stage of its own so that the
// fsyncs, which take tens to hundreds of milliseconds while the CommitLog
// is written heavily (a burst's write-backs), never hold up the write-backs
// and acknowledgements of dequeue_put: the wheel lets Add, Due and Ack run
// during a Flush.
//
// Order: the replay position is read before the wheel captures its
// acknowledged position, so the persisted scan start is never after the
// first write-back of a batch whose acknowledgement is not durable.
type timerFlush struct {
	svc    *Service
	timer  *stage.Timer
	stalls uint64 // wheel Stats().Stalls at the last flush

	nextReopen time.Time     // while the store is failed: the next reopen attempt
	backoff    time.Duration // the pause before the one after it
}

// Reopen attempts of a failed timer store are spaced from reopenMin,
// doubling to reopenMax: each one replays the TimerLog.
const (
	reopenMin = 200 * time.Millisecond
	reopenMax = 5 * time.Second
)

// Receive implements actor.Actor.
func (f *timerFlush) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if f.svc.started(StageFlush) {
			f.svc.dirty.Store(true) // the failed instance may have taken the flag
		}
		f.arm()
	case flushTick:
		if f.svc.paused() {
			f.reopen()
		} else {
			f.flush()
		}
		f.arm()
	case *actor.Stopping:
		f.timer.Stop()
		f.flush()
	case *actor.Restarting:
		f.timer.Stop()
	}
}

func (f *timerFlush) arm() {
	f.timer.Arm(f.svc.opts.FlushInterval, flushTick{})
}

// flush makes the wheel durable, then persists the replay scan start that
// was current before the wheel captured its position.
func (f *timerFlush) flush() {
	svc := f.svc
	if svc.paused() || !svc.dirty.Swap(false) {
		return
	}
	from := svc.ackedOff.Load() // before the ack log is read, and Flush captures the acknowledged position
	limit, limited, waiting, waitStart := svc.acks.durable(svc.opts.Store.DurableEnd())
	if limited {
		svc.opts.Wheel.LimitDurableAck(limit)
	}
	if waiting {
		// The acknowledgements of batches whose write-backs are not durable
		// are not made durable either: a crash re-releases those timers, and
		// the replay scan must see their write-backs that survived.
		from = min(from, waitStart)
	}
	if err := svc.opts.Wheel.Flush(); err != nil {
		svc.dirty.Store(true)
		svc.storeFailed(StageFlush, err)
		return
	}
	if waiting {
		svc.dirty.Store(true) // flush again once their write-backs are durable
	}
	if svc.opts.Faults != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					svc.dirty.Store(true) // the replay checkpoint was not written
					panic(r)
				}
			}()
			svc.opts.Faults.Hit(StageFlush)
		}()
	}
	if from >= 0 {
		svc.replayMu.Lock()
		if a := svc.ackedOff.Load(); a >= 0 {
			from = min(from, a) // lower after a truncation's clamp (an earlier scan start is always safe)
		}
		err := meta.UpdateCheckpoint(svc.opts.Store.FS, svc.opts.Store.CheckpointPath(), ReplayCheckpointKey, from)
		svc.replayMu.Unlock()
		if err != nil {
			svc.opts.Logger.Error().Err(err).Msg("timer replay checkpoint write failed")
		} else {
			svc.send(StageDequeuePut, flushed{from: from})
		}
	}
	if st := svc.opts.Wheel.Stats().Stalls; st != f.stalls {
		f.stalls = st
		svc.KickDequeue() // Due held back until this flush: go on now
	}
}

// reopen tries to reopen the failed timer store (timerwheel.Store.Reopen:
// tail repair and replay, as at open), at most once per backoff; once it
// works the timer stages resume from the store's durable positions.
func (f *timerFlush) reopen() {
	now := f.svc.opts.Now()
	if now.Before(f.nextReopen) {
		return
	}
	if err := f.svc.opts.Wheel.Reopen(now.UnixMilli()); err != nil {
		f.backoff = min(max(2*f.backoff, reopenMin), reopenMax)
		f.nextReopen = now.Add(f.backoff)
		return
	}
	f.backoff, f.nextReopen = 0, time.Time{}
	f.svc.reopened()
}
