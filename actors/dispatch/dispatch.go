// Package dispatch is the consume-queue dispatcher stage (RocketMQ's
// "reput"): it reads the CommitLog from its persisted offset, appends one
// 20-byte unit per record to the record's consume queue, and tells the pull
// stage which queues grew so that parked long polls wake up.
//
// Dispatching is idempotent: a record whose queue offset is already in its
// consume queue is skipped, so restarting from an older checkpoint (after a
// crash, or a supervisor restart) never duplicates units. The checkpoint is
// written only after the consume queues are fsynced, so it is never ahead of
// durable data.
package dispatch

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// StageName is the dispatcher's stable stage name.
const StageName = "dispatch"

// CheckpointKey is the dispatcher's entry in the checkpoint file.
const CheckpointKey = "dispatch"

// batchLimit bounds the records handled per message so that the stage's
// mailbox (checkpoint ticks, stop) is served between batches.
const batchLimit = 4096

// Arrival names a consume queue that grew, and its new end.
type Arrival struct {
	Topic     string
	QueueID   int32
	MaxOffset int64
}

// Options configures the dispatcher.
type Options struct {
	Store *storage.Store
	// Notify receives the queues that grew after each batch (may be nil).
	Notify func([]Arrival)
	// CheckpointInterval is how often units are fsynced and the offset
	// persisted (default 1 s).
	CheckpointInterval time.Duration
	Logger             zerolog.Logger
}

// Kicker wakes the dispatcher, coalescing wake-ups: many appends between two
// batches cost one message.
type Kicker struct {
	stage   atomic.Pointer[stage.Stage]
	pending atomic.Bool
}

// Bind attaches the spawned stage.
func (k *Kicker) Bind(s *stage.Stage) { k.stage.Store(s) }

// Kick asks the dispatcher to read new records; safe from any goroutine.
func (k *Kicker) Kick() {
	s := k.stage.Load()
	if s != nil && k.pending.CompareAndSwap(false, true) {
		s.Send(kick{})
	}
}

type kick struct{}
type checkpointTick struct{}

// Dispatcher is the actor.
type Dispatcher struct {
	opts    Options
	kicker  *Kicker
	offset  int64
	saved   int64
	timer   *stage.Timer
	touched map[consumequeue.QueueID]int64
}

// Producer returns the actor producer.
func Producer(opts Options, k *Kicker) stage.Producer {
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = time.Second
	}
	return func(self *stage.Stage) actor.Actor {
		k.Bind(self)
		return &Dispatcher{opts: opts, kicker: k, timer: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (d *Dispatcher) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		d.start()
	case kick:
		d.kicker.pending.Store(false)
		if more := d.run(); more {
			d.kicker.Kick()
		}
	case checkpointTick:
		d.checkpoint()
		d.armTick()
	case *actor.Stopping, *actor.Restarting:
		d.timer.Stop()
		d.checkpoint()
	}
}

// StartOffset computes where dispatching resumes after the process starts:
// the persisted checkpoint, or the CommitLog's start when the consume queues
// are missing (they are rebuilt). Call it before the stages are spawned and
// store the result in Store.Dispatched.
func StartOffset(st *storage.Store, log zerolog.Logger) int64 {
	cp, err := st.LoadCheckpoint()
	if err != nil {
		log.Warn().Err(err).Msg("dispatch checkpoint unreadable; re-dispatching the whole commitlog")
	}
	off := cp.Values[CheckpointKey]
	if len(st.Queues.Queues()) == 0 {
		off = 0 // consume queues missing: rebuild them all
	}
	return off
}

// start resumes from Store.Dispatched: set from the checkpoint at process
// start, and kept in memory across supervisor restarts (dispatching is
// idempotent, so resuming from any offset at or below the true position is
// safe).
func (d *Dispatcher) start() {
	st := d.opts.Store
	cl := st.CommitLog
	off := st.Dispatched.Load()
	if off < cl.MinOffset() {
		off = cl.MinOffset()
	}
	if off > cl.MaxOffset() {
		off = cl.MaxOffset()
	}
	d.offset, d.saved = off, off
	st.Dispatched.Store(off)
	d.opts.Logger.Info().Int64("offset", off).Int64("commitlog_end", cl.MaxOffset()).Msg("dispatch resuming")
	d.armTick()
	d.kicker.Kick()
}

func (d *Dispatcher) armTick() {
	d.timer.Arm(d.opts.CheckpointInterval, checkpointTick{})
}

// run dispatches about batchLimit records (read in blocks, appended to each
// consume queue in one write per queue); it reports whether more remain.
func (d *Dispatcher) run() bool {
	st := d.opts.Store
	if d.touched == nil {
		d.touched = map[consumequeue.QueueID]int64{}
	}
	pending := map[*consumequeue.Queue][]consumequeue.Unit{}
	n := 0
	for n < batchLimit {
		recs, offs, next, err := st.CommitLog.ReadBlock(d.offset, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(fmt.Errorf("dispatch: read commitlog at %d: %w", d.offset, err))
		}
		for i, rec := range recs {
			if err := d.dispatchRecord(offs[i], rec, pending); err != nil {
				panic(err)
			}
		}
		n += len(recs)
		d.offset = next
	}
	for q, units := range pending {
		if err := q.Append(units...); err != nil {
			id := q.ID()
			panic(fmt.Errorf("dispatch: append %d units to %s/%d: %w", len(units), id.Topic, id.QueueID, err))
		}
		d.touched[q.ID()] = q.MaxOffset()
	}
	st.Dispatched.Store(d.offset)
	d.notify()
	return n >= batchLimit
}

// dispatchRecord queues the unit of the record at off into pending.
func (d *Dispatcher) dispatchRecord(off int64, rec []byte, pending map[*consumequeue.Queue][]consumequeue.Unit) error {
	r, _, err := message.Decode(rec)
	if err != nil {
		return fmt.Errorf("dispatch: decode record at %d: %w", off, err)
	}
	q, err := d.opts.Store.Queues.Queue(r.Topic, r.QueueID)
	if err != nil {
		return fmt.Errorf("dispatch: open queue %s/%d: %w", r.Topic, r.QueueID, err)
	}
	end := q.MaxOffset() + int64(len(pending[q]))
	switch {
	case r.QueueOffset < end:
		return nil // already dispatched before a restart
	case r.QueueOffset > end:
		d.opts.Logger.Error().Str("topic", r.Topic).Int32("queue", r.QueueID).
			Int64("record_queue_offset", r.QueueOffset).Int64("queue_end", end).Int64("commitlog_offset", off).
			Msg("consume queue gap: units before this record are missing")
	}
	tags, _ := message.LookupProperty(r.Properties, message.PropTags)
	pending[q] = append(pending[q], consumequeue.Unit{Offset: off, Size: int32(len(rec)), TagsCode: message.TagsHashCode(tags)})
	return nil
}

func (d *Dispatcher) notify() {
	if len(d.touched) == 0 {
		return
	}
	arrivals := make([]Arrival, 0, len(d.touched))
	for id, max := range d.touched {
		arrivals = append(arrivals, Arrival{Topic: id.Topic, QueueID: id.QueueID, MaxOffset: max})
		delete(d.touched, id)
	}
	if d.opts.Notify != nil {
		d.opts.Notify(arrivals)
	}
}

// checkpoint fsyncs the consume queues and then persists the offset.
func (d *Dispatcher) checkpoint() {
	if d.offset == d.saved {
		return
	}
	st := d.opts.Store
	if err := st.Queues.Sync(); err != nil {
		d.opts.Logger.Error().Err(err).Msg("consume queue fsync failed; checkpoint not advanced")
		return
	}
	if err := meta.UpdateCheckpoint(st.CheckpointPath(), CheckpointKey, d.offset); err != nil {
		d.opts.Logger.Error().Err(err).Msg("dispatch checkpoint write failed")
		return
	}
	d.saved = d.offset
}
