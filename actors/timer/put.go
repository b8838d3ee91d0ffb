package timer

import (
	"errors"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/timerwheel"
)

type deqResync struct{}
type putCheck struct{}

// putDone reports one writer answer for the batch with sequence seq.
type putDone struct {
	epoch uint64
	seq   uint64
	err   error
}

// pendingBatch is a batch being written back.
type pendingBatch struct {
	seq       uint64
	pb        *putBatch
	waiting   int
	failed    bool
	wrote     bool // its timers have write-backs: handed to the writer now, or earlier ones the replay scan found
	startedAt time.Time
	startOff  int64    // CommitLog end before its first append
	matched   []string // shadow batch: the idents whose copy was found
}

// dequeuePut writes due messages back and acknowledges batches in order.
// The dequeue_message workers hand batches over in any order: a batch that
// comes before its turn in release order waits in early.
type dequeuePut struct {
	svc      *Service
	queue    []*pendingBatch
	seq      uint64
	epoch    uint64                   // epoch of the batches being put in order
	next     uint64                   // release order of the next batch to start
	early    map[uint64]*putBatch     // batches that came before their turn
	replayed map[string]int64         // idents already written back (before a rewind; on a replica, not matched yet) -> CommitLog offset
	scanFrom int64                    // where the scan that found them started
	scanned  int64                    // how far the CommitLog was scanned for copies
	awaiting map[string]*pendingBatch // replica: idents whose copy a shadow batch waits for
	cancels  map[string]cancelSeen    // replica: idents a confirmed cancel ended (late cancels; cancels.go)
	stopGen  uint64                   // replica: the stop set's generation releaseStopped last saw
	block    commitlog.BlockReader    // the copy scan's buffers
	timer    *stage.Timer
}

// Receive implements actor.Actor.
func (d *dequeuePut) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if d.svc.started(StageDequeuePut) {
			d.svc.restartDequeue("dequeue_put restarted")
		} else {
			d.resync()
		}
		d.arm()
	case deqResync:
		d.resync()
	case *putBatch:
		if m.epoch != d.svc.deqEpoch.Load() {
			return
		}
		d.inOrder(m)
	case *putDone:
		if m.epoch != d.svc.deqEpoch.Load() {
			return
		}
		d.done(m)
	case flushed:
		d.flushed(m.from)
	case *logCut:
		d.truncated(m)
	case putCheck:
		d.follow()
		d.checkStuck()
		d.arm()
	case *actor.Stopping, *actor.Restarting:
		d.timer.Stop()
	}
}

func (d *dequeuePut) arm() {
	d.timer.Arm(d.svc.opts.FlushInterval, putCheck{})
}

// resync forgets pending batches and collects the timer messages written
// back since the last durable acknowledgement, so their replay is skipped
// (on a replica: so that the shadow batches waiting for them are
// acknowledged). The scan starts at the persisted position, or at the
// in-memory one when that is older (a rewind before a flush), or at the
// log's start when none was ever persisted (a copied or replicated log
// holds the master's write-backs).
func (d *dequeuePut) resync() {
	svc := d.svc
	d.queue = nil
	clear(d.early)
	d.replayed = map[string]int64{}
	d.awaiting = map[string]*pendingBatch{}
	cl := svc.opts.Store.CommitLog
	cp, err := svc.opts.Store.LoadCheckpoint()
	if err != nil && !svc.shadowing.Load() {
		svc.opts.Logger.Warn().Err(err).Msg("checkpoint unreadable; timer replays will not be deduplicated")
		svc.ackedOff.Store(cl.MaxOffset())
		d.scanned = cl.MaxOffset()
		return
	}
	from, ok := cp.Values[ReplayCheckpointKey]
	if !ok || from < cl.MinOffset() {
		from = cl.MinOffset()
	}
	if a := svc.ackedOff.Load(); a >= 0 && a < from {
		from = max(a, cl.MinOffset())
	}
	d.scanned = from
	d.scan(d.scanLimit(), func(id string, off int64, _ []byte) { d.replayed[id] = off })
	d.scanFrom = from
	svc.ackedOff.Store(from)
	if svc.shadowing.Load() {
		svc.ackedOff.Store(d.shadowFrom())
	}
	if len(d.replayed) > 0 {
		// Those timers come back (their acknowledgement was not durable);
		// until it is, a crash scans from here again.
		svc.replayPin.Store(from)
	} else {
		svc.replayPin.Store(math.MaxInt64)
	}
	if len(d.replayed) > 0 {
		svc.opts.Logger.Info().Int("already_written", len(d.replayed)).Int64("scan_from", from).
			Bool("master", !svc.shadowing.Load()).Msg("timer replay: skipping messages written back before the restart")
	}
}

// inOrder starts pb if it is next in release order, then the batches that
// were waiting for it; else pb waits. A new epoch starts from 0.
func (d *dequeuePut) inOrder(pb *putBatch) {
	if pb.epoch != d.epoch {
		d.epoch, d.next = pb.epoch, 0
		clear(d.early)
	}
	if pb.seq != d.next {
		if d.early == nil {
			d.early = map[uint64]*putBatch{}
		}
		d.early[pb.seq] = pb
		return
	}
	d.start(pb)
	d.next++
	for {
		nb, ok := d.early[d.next]
		if !ok {
			return
		}
		delete(d.early, d.next)
		d.start(nb)
		d.next++
	}
}

// start sends a batch's records to the writer, skipping replays.
func (d *dequeuePut) start(pb *putBatch) {
	svc := d.svc
	if pb.shadow != svc.shadowing.Load() {
		return // released before a role change: the rewind it caused re-releases it
	}
	d.seq++
	p := &pendingBatch{seq: d.seq, pb: pb, startedAt: time.Now(), startOff: svc.opts.Store.CommitLog.MaxOffset()}
	d.queue = append(d.queue, p)
	if pb.shadow {
		d.startShadow(p)
		return
	}
	epoch := pb.epoch
	groups := map[writer.QueueKey][][]byte{}
	var order []writer.QueueKey
	// The identities are made only when there is something to look them
	// up in: a steady flow of fires has neither cancels, stops nor replays.
	cancels, stops, replays := len(d.cancels) > 0, svc.stops.any(), len(d.replayed) > 0
	kept := pb.puts[:0] // the puts delivered now or before (ackReady counts them); filtered in place
	for i := range pb.puts {
		pu := &pb.puts[i]
		if i == len(pb.puts)/2 && i > 0 {
			svc.opts.Faults.Hit(StageDequeuePut)
		}
		if cancels && d.cancelled(pu.cancelKey()) {
			svc.opts.Logger.Debug().Str("ident", pu.identity()).Msg("timer not written back: a confirmed cancel ended it")
			continue
		}
		if stops && svc.stops.stopped(pu.stopID()) {
			if pu.key.Topic != Topic { // the fire, not its next-fire record
				svc.opts.Metrics.Cancelled.Inc()
			}
			svc.opts.Logger.Debug().Str("ident", pu.identity()).Msg("recurring timer not written back: its schedule is stopped")
			continue
		}
		kept = append(kept, *pu) // at an index <= i: pu's own or one already passed
		if replays && d.isReplayed(pu) {
			// Its write-back is an earlier one, found by the scan from
			// scanFrom: the batch's write-backs start there, for the replay
			// scan after a crash and for the durability of its ack.
			p.startOff, p.wrote = min(p.startOff, d.scanFrom), true
			svc.opts.Metrics.Duplicates.WithLabelValues("suppressed").Inc()
			svc.opts.Logger.Debug().Str("ident", pu.identity()).Msg("timer write-back skipped: already in the CommitLog")
			continue
		}
		if _, ok := groups[pu.key]; !ok {
			order = append(order, pu.key)
		}
		groups[pu.key] = append(groups[pu.key], pu.record)
	}
	pb.puts = kept
	p.waiting = len(order)
	p.wrote = p.wrote || len(order) > 0
	if p.startOff < svc.replayPin.Load() {
		svc.replayPin.Store(p.startOff)
	}
	for _, k := range order {
		seq := p.seq
		kind := stats.KindTimer
		switch k.Topic {
		case PopReviveTopic:
			kind = stats.KindPop
		case Topic:
			kind = stats.KindSystem // a schedule's next fire (recur.go)
		}
		svc.opts.Append(&writer.Append{Key: k, Records: groups[k], Kind: kind, Reply: func(r writer.Result) {
			svc.send(StageDequeuePut, &putDone{epoch: epoch, seq: seq, err: r.Err})
		}})
	}
	d.ackReady()
}

// isReplayed reports whether the resync's scan found pu's write-back.
func (d *dequeuePut) isReplayed(pu *put) bool {
	_, ok := d.replayed[pu.identity()]
	return ok
}

func (d *dequeuePut) done(m *putDone) {
	for _, p := range d.queue {
		if p.seq == m.seq {
			p.waiting--
			if m.err != nil {
				p.failed = true
				d.svc.opts.Logger.Error().Err(m.err).Msg("timer write-back failed; will rewind and retry")
			}
			break
		}
	}
	d.ackReady()
}

// ackReady acknowledges finished batches at the head of the queue.
func (d *dequeuePut) ackReady() {
	svc := d.svc
	for len(d.queue) > 0 && d.queue[0].waiting == 0 {
		p := d.queue[0]
		if p.failed {
			svc.restartDequeue("write-back failed")
			return
		}
		if err := svc.opts.Wheel.Ack(p.pb.batch); err != nil {
			if errors.Is(err, timerwheel.ErrFailed) {
				svc.storeFailed(StageDequeuePut, err) // the reopen rewinds the dequeue side
				return
			}
			svc.opts.Logger.Error().Err(err).Msg("timer ack refused; rewinding")
			svc.restartDequeue("ack refused")
			return
		}
		entry := ackEntry{from: p.pb.batch.From, to: p.pb.batch.To, start: p.startOff}
		if p.wrote {
			entry.end = svc.opts.Store.CommitLog.MaxOffset() // every write-back of the batch lies below
		}
		svc.acks.acked(entry) // before ackedOff moves: timer_flush reads them in the other order
		if !p.pb.shadow {
			now := svc.opts.Now()
			for _, pu := range p.pb.puts {
				if pu.key.Topic == PopReviveTopic {
					svc.opts.Metrics.PopDeadlines.Inc()
					continue
				}
				if pu.key.Topic == Topic {
					continue // a schedule's next fire, not a delivery
				}
				svc.opts.Metrics.Delivered.Inc()
				svc.opts.Metrics.Lateness.Observe(float64(now.UnixMilli()-pu.due) / 1000)
			}
		}
		d.queue = d.queue[1:]
		wasFull := svc.dequeueFull()
		svc.deqInFly.Add(-1)
		svc.deqInFlyTimers.Add(-int64(p.pb.batch.Len()))
		full := p.pb.batch.Len() >= svc.opts.BatchSize
		switch {
		case p.pb.shadow:
			d.shadowAcked(p)
			svc.ackedOff.Store(d.shadowFrom())
		case len(d.queue) > 0:
			svc.ackedOff.Store(d.queue[0].startOff)
		default:
			svc.ackedOff.Store(svc.opts.Store.CommitLog.MaxOffset())
		}
		svc.dirty.Store(true) // after ackedOff: timer_flush reads them in the other order
		if wasFull || full {
			svc.KickDequeue() // more may be due right now; otherwise dequeue_get's timer is armed
		}
	}
}

// flushed moves the replay pin up to the persisted scan start from: a
// crash now rescans from there (timer_flush wrote it). Every batch started
// since timer_flush read from starts at or after it, so the pin never
// passes a write-back that a rescan needs.
func (d *dequeuePut) flushed(from int64) {
	svc := d.svc
	if len(d.queue) == 0 && from >= svc.opts.Store.CommitLog.MaxOffset() {
		svc.replayPin.Store(math.MaxInt64) // nothing written back since: no rescan needs anything
		return
	}
	svc.replayPin.Store(from)
}

// checkStuck rewinds when the writer has not answered the oldest batch in
// time (a lost append after a writer restart).
func (d *dequeuePut) checkStuck() {
	if len(d.queue) > 0 && !d.queue[0].pb.shadow && time.Since(d.queue[0].startedAt) > d.svc.opts.PutTimeout {
		d.svc.restartDequeue("write-back timed out")
	}
}
