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
//
// Failures: a consume-queue write the disk refuses for want of space
// (ENOSPC, EDQUOT; the queue rolled it back) pauses dispatching and retries
// every RetryInterval, so a full disk does not crash-loop the stage; the
// batch is re-dispatched idempotently once space returns. A queue left in its sticky failed state
// (failed fsync or rollback) makes the dispatcher fail on purpose; its
// supervisor restarts it and the new instance reopens every failed queue
// (consumequeue.Queue.Reopen) before resuming, re-dispatching from the
// CommitLog whatever a reopen cut. A reopen that fails is fatal
// (supervisor.ErrFatal): the stage is retired and the broker unhealthy.
//
// Damage (see damage.go) does not stall it. Under the store's
// corruption.PolicySkip a damaged CommitLog span is skipped to the next entry
// that verifies, counted and logged, and the queue offsets its lost records
// held become hole units; a consume queue a reader found damaged, or whose
// tail recovery cut, is rebuilt from the CommitLog. Under PolicyStop the
// stage fails with an error wrapping corruption.ErrStop and
// commitlog.ErrCorrupt, which the supervisor treats as fatal.
//
// Checkpoints run on a checkpointer goroutine the dispatcher owns (see
// checkpointer.go). A panic there does not kill the process: the
// checkpointer recovers it and reports it, the dispatcher fails with it and
// is restarted by its supervisor, and the new instance makes the checkpoint
// the panic cut short at its first tick.
package dispatch

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
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
	// Notify receives the queues that grew after each batch (may be nil);
	// the slice is valid during the call only (copy it to keep it).
	Notify func([]Arrival)
	// CheckpointInterval is how often units are fsynced and the offset
	// persisted (default 1 s).
	CheckpointInterval time.Duration
	// RetryInterval is how long dispatching pauses after the disk refused
	// a consume-queue write (default 1 s).
	RetryInterval time.Duration
	// UpToDurableEnd (replication on) dispatches only the records that end
	// at or below Store.DurableEnd() (the offset the replicas confirmed):
	// no consumer sees, and nothing derived holds, an entry a failover
	// could take back. The dispatcher is kicked when the confirmed offset
	// advances (Kicker.Kick from the writer's OnConfirmed, the
	// replication receiver's OnAppended) and looks again every
	// ConfirmPoll while records wait above it.
	UpToDurableEnd bool
	// ConfirmPoll is that look's period (default 20 ms).
	ConfirmPoll time.Duration
	Logger      zerolog.Logger
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
		s.Send(kickMsg)
	}
}

type kick struct{}

// kickMsg is kick as Kick sends it (no allocation per kick).
var kickMsg = stage.Prewrapped(kick{})

type checkpointTick struct{}

// Dispatcher is the actor.
type Dispatcher struct {
	opts    Options
	kicker  *Kicker
	self    *stage.Stage
	offset  int64
	saved   int64
	ckpt    *checkpointer
	ckptRun bool         // a checkpoint is in progress on ckpt
	ckptPan bool         // ckpt panicked: the restart that follows skips the final checkpoint
	timer   *stage.Timer // checkpoint ticks
	retry   *stage.Timer // re-kick after a refused write
	paused  error        // why dispatching is paused (nil: it is not)
	touched map[consumequeue.QueueID]int64
	// skips are the damaged CommitLog spans skipped since the stage
	// started, oldest first: a queue gap behind one is filled with holes.
	skips []span

	// Scratch reused from run to run, so that a run allocates nothing in
	// the common case.
	block    commitlog.BlockReader
	pending  map[*consumequeue.Queue][]consumequeue.Unit
	arrivals []Arrival
	queues   [8]cachedQueue // the queues of the latest records
	nextSlot int
}

// cachedQueue remembers which queue a topic and queue id resolve to.
type cachedQueue struct {
	topic   string
	queueID int32
	q       *consumequeue.Queue
}

// Producer returns the actor producer.
func Producer(opts Options, k *Kicker) stage.Producer {
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = time.Second
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = time.Second
	}
	if opts.ConfirmPoll <= 0 {
		opts.ConfirmPoll = 20 * time.Millisecond
	}
	return func(self *stage.Stage) actor.Actor {
		k.Bind(self)
		return &Dispatcher{opts: opts, kicker: k, self: self, timer: self.NewTimer(), retry: self.NewTimer()}
	}
}

// Receive implements actor.Actor.
func (d *Dispatcher) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		d.start()
	case *Trim:
		d.trim(m)
	case *Cut:
		d.cut(m)
	case kick:
		d.kicker.pending.Store(false)
		d.repairQueues()
		if more := d.run(); more {
			d.kicker.Kick()
		}
	case checkpointTick:
		d.repairQueues()
		if to := d.durableOffset(); !d.ckptRun && to != d.saved {
			d.ckptRun = true
			d.ckpt.request(to)
		}
		d.armTick()
	case *checkpointDone:
		if m.from != d.ckpt {
			return // from an instance before a restart
		}
		d.ckptRun = false
		if m.err == nil && m.offset > d.offset {
			// A Cut came during this checkpoint: put it back at the cut.
			if err := persist(d.opts.Store, d.offset, d.opts.Logger); err == nil {
				d.saved = d.offset
			}
		} else if m.err == nil {
			d.saved = max(d.saved, m.offset)
		} else if errors.Is(m.err, consumequeue.ErrFailed) {
			panic(fmt.Errorf("dispatch: restarting to reopen a failed consume queue: %w", m.err))
		}
	case *checkpointerPanicked:
		if m.from != d.ckpt {
			return // from an instance before a restart
		}
		d.ckptPan = true
		panic(fmt.Errorf("dispatch: restarting after its checkpointer panicked: %v", m.reason))
	case *actor.Stopping, *actor.Restarting:
		d.timer.Stop()
		d.retry.Stop()
		d.ckpt.stop()
		if d.ckptPan {
			// A panic here would stop the restart; the new instance
			// checkpoints on its first tick instead (start).
			d.opts.Logger.Warn().Int64("offset", d.offset).Msg("dispatch restarting after a checkpointer panic: final checkpoint skipped")
			return
		}
		_ = d.checkpoint()
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
	cutUndurableUnits(st, off, log)
	return min(off, cutQueuesStart(st, log))
}

// start resumes from Store.Dispatched: set from the checkpoint at process
// start, and kept in memory across supervisor restarts (dispatching is
// idempotent, so resuming from any offset at or below the true position is
// safe). A persisted checkpoint behind it (the instance before could not,
// or did not, make its last one) is brought up to it at the first tick.
func (d *Dispatcher) start() {
	st := d.opts.Store
	cl := st.CommitLog
	off := d.reopenFailedQueues(st.Dispatched.Load())
	if off < cl.MinOffset() {
		off = cl.MinOffset()
	}
	if off > cl.MaxOffset() {
		off = cl.MaxOffset()
	}
	d.offset, d.saved = off, off
	if cp, err := st.LoadCheckpoint(); err == nil {
		if v, ok := cp.Get(CheckpointKey); ok && v < off {
			d.saved = v // the instance before did not persist its last offset: the first tick does
		}
	}
	st.Dispatched.Store(off)
	st.OnDamagedUnit(d.kicker.Kick)
	d.opts.Logger.Info().Int64("offset", off).Int64("commitlog_end", cl.MaxOffset()).Msg("dispatch resuming")
	d.ckpt = startCheckpointer(st, d.self, d.opts.Logger)
	d.armTick()
	d.kicker.Kick()
}

func (d *Dispatcher) armTick() {
	d.timer.Arm(d.opts.CheckpointInterval, checkpointTick{})
}

// reopenFailedQueues reopens every consume queue left in its sticky failed
// state and returns the CommitLog offset to resume from: off, or earlier
// when a reopen cut units (they are re-dispatched from the record of the
// queue's last kept unit; re-dispatch skips what the queues hold).
func (d *Dispatcher) reopenFailedQueues(off int64) int64 {
	log := d.opts.Logger
	for _, q := range d.opts.Store.Queues.FailedQueues() {
		id, cause := q.ID(), q.Failed()
		log.Warn().Err(cause).Str("queue", id.String()).Msg("consume queue is in its failed state; reopening it")
		before, after, err := q.Reopen()
		if err != nil {
			log.Error().Err(err).AnErr("cause", cause).Str("queue", id.String()).
				Msg("reopening the failed consume queue failed: dispatch stops for good until the process is restarted")
			panic(fmt.Errorf("dispatch: reopen the failed consume queue %s: %w: %w", id, supervisor.ErrFatal, err))
		}
		if after < before {
			from := d.opts.Store.CommitLog.MinOffset()
			if u, ok := q.LastUnit(); ok {
				from = u.Offset
			}
			off = min(off, from)
		}
		log.Warn().Str("queue", id.String()).Int64("units_before", before).Int64("units_after", after).
			Int64("resume_from", off).Msg("consume queue reopened after its failure")
	}
	return off
}

// run dispatches about batchLimit records (read in blocks, appended to each
// consume queue in one write per queue); it reports whether more remain.
func (d *Dispatcher) run() bool {
	st := d.opts.Store
	if d.touched == nil {
		d.touched = map[consumequeue.QueueID]int64{}
	}
	start := d.offset
	if d.pending == nil {
		d.pending = map[*consumequeue.Queue][]consumequeue.Unit{}
	}
	pending := d.pending
	n := 0
	var refused error // a write the disk refused: pause and retry the batch
	var stop error    // damage under PolicyStop: keep what came before, then fail
	limit, held := d.limit(), false
	for n < batchLimit && refused == nil && stop == nil && !held {
		if d.offset >= limit {
			held = d.offset < st.CommitLog.MaxOffset()
			break
		}
		recs, offs, next, eof, serr := d.read(&d.block, d.offset)
		if eof || serr != nil {
			stop = serr
			break
		}
		if recs, next, held = unconfirmed(recs, offs, next, limit); held && len(recs) == 0 {
			break
		}
		for i, rec := range recs {
			err := d.dispatchRecord(offs[i], rec, pending)
			if errors.Is(err, corruption.ErrStop) {
				stop, next = err, offs[i]
				break
			}
			if refused = err; refused != nil {
				break
			}
		}
		n += max(len(recs), 1)
		d.offset = next
	}
	for q, units := range pending {
		if len(units) == 0 {
			continue
		}
		pending[q] = units[:0]
		if err := q.Append(units...); err != nil {
			id := q.ID()
			err = fmt.Errorf("dispatch: append %d units to %s/%d: %w", len(units), id.Topic, id.QueueID, err)
			if !refusedWrite(err) || q.Failed() != nil { // a failed rollback is sticky
				panic(err)
			}
			refused = err
			continue
		}
		d.touched[q.ID()] = q.MaxOffset()
	}
	if refused != nil {
		d.pause(refused)
		d.offset = start // queues that took their units skip them next time
		d.notify()
		return false
	}
	d.resume()
	d.notify()
	st.Dispatched.Store(d.offset) // after notify: who sees it caught up sees the arrivals too
	if held {
		d.retry.Arm(d.opts.ConfirmPoll, kick{}) // records wait above the confirmed offset
	}
	if stop != nil {
		panic(stop) // after keeping what came before the damage
	}
	return n >= batchLimit
}

// refusedWrite reports whether err is a write the file system refused for
// want of space (ENOSPC, EDQUOT), which the queue rolled back: worth
// retrying once space returns. Other errors restart the stage as before.
func refusedWrite(err error) bool {
	return !errors.Is(err, consumequeue.ErrFailed) && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT))
}

// pause stops dispatching for RetryInterval after a refused write.
func (d *Dispatcher) pause(err error) {
	if d.paused == nil {
		d.opts.Logger.Warn().Err(err).Dur("retry_in", d.opts.RetryInterval).
			Msg("consume queue write refused (disk full?); dispatch paused, retrying")
	}
	d.paused = err
	d.retry.Arm(d.opts.RetryInterval, kick{})
}

// resume notes that a paused dispatch went through again.
func (d *Dispatcher) resume() {
	if d.paused != nil {
		d.opts.Logger.Info().AnErr("was", d.paused).Int64("offset", d.offset).Msg("dispatch resumed")
		d.paused = nil
	}
}

// dispatchRecord queues the unit of the record at off into pending. An
// undecodable record is damage (see unitOf): skipped, or an error wrapping
// corruption.ErrStop. It panics on a queue it cannot open, except for a
// queue the disk has no room to create: that error is returned.
func (d *Dispatcher) dispatchRecord(off int64, rec []byte, pending map[*consumequeue.Queue][]consumequeue.Unit) error {
	u, topic, queueID, qoff, ok, err := d.unitOf(off, rec)
	if err != nil {
		return err
	}
	if !ok {
		return nil // undecodable record, skipped
	}
	q, err := d.queue(topic, queueID)
	if err != nil {
		err = fmt.Errorf("dispatch: open queue %s/%d: %w", topic, queueID, err)
		if !refusedWrite(err) {
			panic(err)
		}
		return err
	}
	id := q.ID()
	units := pending[q]
	end := q.MaxOffset() + int64(len(units))
	switch {
	case qoff < end:
		return nil // already dispatched before a restart
	case qoff > end:
		prev := int64(-1)
		if len(units) > 0 {
			prev = units[len(units)-1].Offset
		} else if last, ok := q.LastUnit(); ok {
			prev = last.Offset
		}
		units = d.fillGap(id, units, prev, off, qoff-end)
	}
	pending[q] = append(units, u)
	return nil
}

// queue returns the consume queue of topic and queueID (created when
// missing), from a small cache of the latest ones: no string per record.
func (d *Dispatcher) queue(topic []byte, queueID int32) (*consumequeue.Queue, error) {
	for i := range d.queues {
		c := &d.queues[i]
		if c.q != nil && c.queueID == queueID && c.topic == string(topic) {
			return c.q, nil
		}
	}
	q, err := d.opts.Store.Queues.Queue(string(topic), queueID)
	if err != nil {
		return nil, err
	}
	d.queues[d.nextSlot] = cachedQueue{topic: q.ID().Topic, queueID: queueID, q: q}
	d.nextSlot = (d.nextSlot + 1) % len(d.queues)
	return q, nil
}

// unitOf decodes the record at off into its unit, queue and queue offset.
// An undecodable record (it passed its checksum, so it was written that
// way) is damage too: under PolicySkip it is reported and u is nil.
func (d *Dispatcher) unitOf(off int64, rec []byte) (u consumequeue.Unit, topic []byte, queueID int32, qoff int64,
	ok bool, err error) {
	l, err := message.Check(rec)
	if err != nil {
		err = fmt.Errorf("dispatch: decode record at %d: %w", off, err)
		to := off + int64(len(rec)) + commitlog.EntryOverhead
		if !d.skipping() {
			return u, nil, 0, 0, false, fmt.Errorf("%w: %w", corruption.ErrStop, err)
		}
		d.report(off, to, err.Error())
		return u, nil, 0, 0, false, nil
	}
	tags, _ := message.LookupPropertyBytes(l.Properties(rec), message.PropTags)
	u = consumequeue.Unit{Offset: off, Size: int32(len(rec)), TagsCode: message.TagsHashCodeBytes(tags)}
	return u, l.Topic(rec), message.PeekQueueID(rec), message.PeekQueueOffset(rec), true, nil
}

func (d *Dispatcher) notify() {
	if len(d.touched) == 0 {
		return
	}
	arrivals := d.arrivals[:0]
	defer func() { d.arrivals = arrivals[:0] }()
	for id, max := range d.touched {
		arrivals = append(arrivals, Arrival{Topic: id.Topic, QueueID: id.QueueID, MaxOffset: max})
		delete(d.touched, id)
	}
	if d.opts.Notify != nil {
		d.opts.Notify(arrivals)
	}
}

// checkpoint fsyncs the consume queues and then persists the offset, on
// the dispatcher (when it stops; the periodic ones run on the
// checkpointer). It returns why it could not (a failed fsync leaves its
// queue failed: consumequeue.ErrFailed).
func (d *Dispatcher) checkpoint() error {
	to := d.durableOffset()
	if to == d.saved {
		return nil
	}
	if err := persist(d.opts.Store, to, d.opts.Logger); err != nil {
		return err
	}
	d.saved = to
	return nil
}

// durableOffset is the dispatch position a checkpoint may persist: the
// position, held back to the CommitLog's durable end (storage.DurableEnd),
// so that no persisted position claims records a crash could take (the
// queues' units above it are re-dispatched, idempotently).
func (d *Dispatcher) durableOffset() int64 {
	return max(min(d.offset, d.opts.Store.DurableEnd()), d.saved)
}
