package timer

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// The releases not yet acknowledged are bounded by batches and by timers.
// A steady flow releases many small batches (one per due slot), and a
// wheel Flush (fsyncs) holds acknowledgements up for a while: a bound of a
// few batches then stalled releases for the length of the fsync. A burst
// releases full batches: the timer bound keeps what is in flight (and its
// rebuilt records) to a few tens of MB.
const (
	maxDequeueInFlight       = 64
	maxDequeueInFlightTimers = 32 << 10
)

// dequeueFull reports whether releases must wait for acknowledgements.
func (s *Service) dequeueFull() bool {
	return s.deqInFly.Load() >= maxDequeueInFlight || s.deqInFlyTimers.Load() >= maxDequeueInFlightTimers
}

type deqKick struct{}
type deqRewind struct{}

// deqTick fires at the wheel's next due time; gen tells stale ticks apart.
type deqTick struct{ gen uint64 }

// deqBatch carries a released batch from dequeue_get to a dequeue_message
// worker; seq is its place in release order within the epoch.
type deqBatch struct {
	epoch  uint64
	seq    uint64
	shadow bool // released on a replica: acknowledged by copies, not written
	batch  timerwheel.Batch
}

// put is one record to write back, with its identity for replay checks
// (identity: UNIQ_KEY + "@" + TIMER_OUT_MS, made only when needed).
type put struct {
	key    writer.QueueKey
	record []byte
	uniq   []byte // UNIQ_KEY, inside record
	outMs  []byte // TIMER_OUT_MS, inside record
	due    int64
	// A recurring timer's fire and next-fire record (recur.go):
	// cancelUniq and cancelDue make the identity a cancel of the fire
	// names (the schedule's UNIQ_KEY @ the fire's due time; cancelUniq
	// nil: identity()), suffix tells the next-fire record's identity from
	// the fire's, next is that record (nil: the schedule ends here), and
	// stopTopic and stopUniq (the schedule's real topic and UNIQ_KEY, on
	// both records) name the schedule in the stop set (stopID, stops.go;
	// stopUniq nil for other timers).
	cancelUniq []byte
	cancelDue  int64
	suffix     string
	next       *put
	stopTopic  string
	stopUniq   []byte
}

// putBatch carries rebuilt messages from a dequeue_message worker to
// dequeue_put, with the batch's release order.
type putBatch struct {
	epoch  uint64
	seq    uint64
	shadow bool
	batch  timerwheel.Batch
	puts   []put
}

// dequeueGet releases due timers from the wheel.
type dequeueGet struct {
	svc   *Service
	timer *stage.Timer
	gen   uint64
	// epoch is the dequeue epoch this stage has rewound to; released
	// batches carry it, so batches released before a rewind was processed
	// are dropped downstream.
	epoch uint64
	seq   uint64 // release order of the next batch in this epoch
	// catch is the enqueue catch-up that must finish before the first
	// release after a start or rewind (see catchUp).
	catch catchUp
}

// Receive implements actor.Actor.
func (d *dequeueGet) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if d.svc.started(StageDequeueGet) {
			d.svc.restartDequeue("dequeue_get restarted")
			return // the deqRewind just queued takes the new epoch
		}
		d.epoch = d.svc.deqEpoch.Load()
		d.catch = d.svc.newCatchUp()
		d.run()
	case deqKick:
		d.svc.deqKick.Store(false)
		d.run()
	case deqTick:
		if m.gen == d.gen {
			d.run()
		}
	case deqRewind:
		d.rewind()
		d.catch = d.svc.newCatchUp()
		d.run()
	case *actor.Stopping, *actor.Restarting:
		d.timer.Stop()
	}
}

// rewind starts a new epoch of its own: every batch released before is
// stale (even one released after the restart that asked for this rewind,
// stamped with that restart's epoch), so the in-flight counts start from
// zero and release order from 0; then the wheel re-releases everything
// not acknowledged.
func (d *dequeueGet) rewind() {
	svc := d.svc
	d.epoch, d.seq = svc.deqEpoch.Add(1), 0
	svc.deqInFly.Store(0)
	svc.deqInFlyTimers.Store(0)
	if err := svc.opts.Wheel.Rewind(); err != nil {
		svc.storeFailed(StageDequeueGet, err) // the reopen rewinds again
	}
}

// run releases every due batch the pipeline has room for, then arms one
// timer for the next due time. Batches go to the dequeue_message workers
// in turn.
func (d *dequeueGet) run() {
	svc := d.svc
	w := svc.opts.Wheel
	if !d.catch.done(svc) {
		d.timer.Arm(5*time.Millisecond, deqTick{gen: d.gen})
		return
	}
	for !svc.dequeueFull() && !svc.paused() {
		b, err := w.Due(svc.opts.Now().UnixMilli(), svc.opts.BatchSize)
		if b.Len() > 0 || b.From != b.To {
			svc.opts.Faults.Hit(StageDequeueGet)
			svc.deqInFly.Add(1)
			svc.deqInFlyTimers.Add(int64(b.Len()))
			svc.send(svc.workers[d.seq%uint64(len(svc.workers))],
				&deqBatch{epoch: d.epoch, seq: d.seq, shadow: svc.shadowing.Load(), batch: b})
			d.seq++
		}
		if err != nil {
			svc.storeFailed(StageDequeueGet, err)
			break
		}
		if b.Len() < svc.opts.BatchSize {
			break
		}
	}
	d.arm()
}

// arm schedules the next run at the wheel's next due time (at most one
// second ahead, so clock jumps are noticed).
func (d *dequeueGet) arm() {
	d.gen++
	gen, svc := d.gen, d.svc
	wait := time.Second
	if at, ok := svc.opts.Wheel.NextDue(); ok {
		wait = min(wait, max(time.Duration(at-svc.opts.Now().UnixMilli())*time.Millisecond, time.Millisecond))
	}
	if svc.dequeueFull() {
		wait = max(wait, 5*time.Millisecond)
	}
	d.timer.Arm(wait, deqTick{gen: gen})
}

// dequeueMessage is a dequeue_message worker: it reads released timers'
// messages and rebuilds them for their real topic. Workers take batches in
// turn and work side by side; a batch's reads are one CommitLog pread per
// run of adjacent records, and timers due together are seldom stored
// together, so this is the dequeue side's costliest step.
type dequeueMessage struct {
	svc   *Service
	name  string
	b     rebuilder
	rd    storage.UnitReader  // the batch's records, until the next batch
	units []consumequeue.Unit // scratch
	// outgrew is how much the last batch's records outgrew their estimate
	// (in 1/16ths, at least 16): a batch of recurring fires writes two
	// records per timer, and an arena grown by append copies itself over
	// and over (the costliest step of a fire before it was sized so).
	outgrew int
	// putsPerTimer is 2 when the last batch held recurring fires (a fire
	// and its next-fire record each), else 1 (0 before the first batch).
	putsPerTimer int
}

// rebuildGrowth is about how much a rebuilt record outgrows the stored one
// (the two timer properties, a longer topic name).
const rebuildGrowth = 96

// arenaSize is the arena for a batch whose records are estimated at size
// bytes, scaled by how much the last batch outgrew its estimate.
func (d *dequeueMessage) arenaSize(size int) int {
	return size * max(d.outgrew, 16) / 16
}

// noteArena remembers how much a batch's records (used bytes) outgrew
// their estimate size, with 1/16 to spare.
func (d *dequeueMessage) noteArena(used, size int) {
	if size > 0 {
		d.outgrew = min(used*16/size+1, 64)
	}
}

// Receive implements actor.Actor.
func (d *dequeueMessage) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if d.svc.started(d.name) {
			d.svc.restartDequeue(d.name + " restarted")
		}
	case *deqBatch:
		svc := d.svc
		if m.epoch != svc.deqEpoch.Load() {
			return
		}
		now := svc.opts.Now().UnixMilli()
		puts := make([]put, 0, len(m.batch.Timers)*max(d.putsPerTimer, 1))
		units := d.units[:0]
		size := 0
		for _, t := range m.batch.Timers {
			units = append(units, consumequeue.Unit{Offset: t.CommitLogOffset, Size: t.Size})
			size += int(t.Size) + rebuildGrowth
		}
		d.units = units
		raws := d.rd.Read(svc.opts.Store.CommitLog, units) // rebuild copies what it keeps
		d.b.reset(len(m.batch.Timers), d.arenaSize(size))
		for i, t := range m.batch.Timers {
			if i == len(m.batch.Timers)/2 {
				svc.opts.Faults.Hit(StageDequeueMessage) // any worker
				svc.opts.Faults.Hit(d.name)
			}
			p, reason := d.b.rebuild(raws[i], t, now)
			if reason != "" {
				svc.opts.Metrics.Skipped.WithLabelValues(reason).Inc()
				svc.opts.Logger.Warn().Int64("commitlog_offset", t.CommitLogOffset).Str("reason", reason).
					Msg("due timer message dropped")
				svc.lostEntry(t, reason)
				continue
			}
			puts = append(puts, p)
			if p.next != nil {
				puts = append(puts, *p.next) // the schedule's next fire, written back with it
			}
		}
		d.noteArena(len(d.b.arena), size)
		d.putsPerTimer = 1
		if len(puts) > len(m.batch.Timers) {
			d.putsPerTimer = 2
		}
		for _, e := range d.b.ended {
			svc.opts.Logger.Info().Str("schedule", e).Msg("recurring timer ended")
		}
		d.b.ended = d.b.ended[:0]
		if n := len(m.batch.Cancelled); n > 0 && !m.shadow {
			svc.opts.Metrics.Cancelled.Add(uint64(n))
		}
		svc.send(StageDequeuePut, &putBatch{epoch: m.epoch, seq: m.seq, shadow: m.shadow, batch: m.batch, puts: puts})
	}
}
