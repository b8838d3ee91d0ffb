package timer

import (
	"fmt"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/corruption"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// maxEnqueueInFlight bounds the batches between enqueue_get and enqueue_put.
const maxEnqueueInFlight = 4

// enqueueReadBatch is how many consume-queue units enqueue_get reads per batch.
const enqueueReadBatch = 4096

type enqKick struct{}
type enqResume struct{}
type enqPoll struct{}

// enqBatch carries timers from enqueue_get to enqueue_put.
type enqBatch struct {
	epoch  uint64
	timers []timerwheel.Timer
}

// enqDone tells enqueue_get that enqueue_put finished a batch.
type enqDone struct{}

// enqueueGet reads the timer topic's consume queue.
type enqueueGet struct {
	svc   *Service
	next  int64  // next consume-queue offset to read
	epoch uint64 // the epoch of next: batches carry it
	timer *stage.Timer
}

// Receive implements actor.Actor.
func (e *enqueueGet) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if e.svc.started(StageEnqueueGet) {
			e.svc.restartEnqueue("enqueue_get restarted")
		}
		e.resume()
		e.arm()
	case enqResume:
		e.resume()
		e.run()
	case enqKick:
		e.svc.enqKick.Store(false)
		e.run()
	case enqDone:
		e.run()
	case enqPoll:
		e.run()
		e.arm()
	case *actor.Stopping, *actor.Restarting:
		e.timer.Stop()
	}
}

// resume reads the enqueue position from the wheel: everything up to it is
// in the TimerLog.
//
// The epoch is taken here, not when sending: a batch read before this
// stage saw a restart of the enqueue side carries the old epoch and is
// dropped, so it cannot push the wheel's position past timers that the
// resumed read has yet to deliver.
func (e *enqueueGet) resume() {
	e.epoch = e.svc.enqEpoch.Load()
	e.next = e.svc.opts.Wheel.Checkpoint().EnqueueQueueOffset + 1
}

func (e *enqueueGet) arm() {
	e.timer.Arm(100*time.Millisecond, enqPoll{})
}

// run turns new consume-queue units into timer batches, keeping at most
// maxEnqueueInFlight batches ahead of enqueue_put.
func (e *enqueueGet) run() {
	svc := e.svc
	svc.readStops() // stops.go
	q := svc.opts.Store.Queues.Lookup(Topic, 0)
	if q == nil || svc.paused() {
		return // paused: the store's reopen restarts the enqueue side
	}
	if min := q.MinOffset(); e.next < min {
		e.next = min
	}
	for svc.enqInFly.Load() < maxEnqueueInFlight && e.next < q.MaxOffset() {
		units, err := q.Read(e.next, enqueueReadBatch)
		if err != nil {
			svc.opts.Logger.Error().Err(err).Int64("offset", e.next).Msg("read timer consume queue failed")
			return
		}
		if len(units) == 0 {
			return
		}
		timers := make([]timerwheel.Timer, 0, len(units))
		records, states := storage.ReadUnitsChecked(svc.opts.Store.CommitLog, units)
		taken := len(units)
		for i, u := range units {
			if i == len(units)/2 {
				svc.opts.Faults.Hit(StageEnqueueGet)
			}
			if records[i] == nil && e.damaged(q.ID(), e.next+int64(i), u, states[i]) {
				taken = i // wait here for the consume queue's rebuild
				break
			}
			t, reason := timerOf(records[i], u.Offset, e.next+int64(i))
			if records[i] == nil {
				reason = unreadableReason(states[i])
			}
			if reason != "" {
				svc.opts.Metrics.Skipped.WithLabelValues(reason).Inc()
				svc.opts.Logger.Warn().Int64("commitlog_offset", u.Offset).Str("reason", reason).
					Msg("timer message skipped")
				continue
			}
			timers = append(timers, t)
		}
		if taken == 0 {
			return // the poll retries after the rebuild
		}
		e.next += int64(taken)
		svc.enqInFly.Add(1)
		svc.send(StageEnqueuePut, &enqBatch{epoch: e.epoch, timers: timers})
	}
}

// damaged handles a timer consume-queue unit whose record could not be
// read, and reports whether reading must stop there. A damaged unit is
// reported to the dispatcher (which rebuilds the queue) and stops the read
// until then; a damaged message is skipped and counted under
// on-corruption=skip and stops the stage under stop (panic with an error
// wrapping corruption.ErrStop); holes and I/O errors are skipped.
func (e *enqueueGet) damaged(id consumequeue.QueueID, at int64, u consumequeue.Unit, state storage.UnitState) bool {
	st := e.svc.opts.Store
	switch state {
	case storage.UnitDamaged:
		st.ReportDamagedUnit(id, at)
		e.svc.opts.Logger.Error().Str("queue", id.String()).Int64("queue_offset", at).
			Msg("timer consume-queue unit does not lead to its message; waiting for the rebuild")
		return true
	case storage.UnitRecordDamaged:
		if st.OnCorruption() == corruption.PolicyStop {
			panic(fmt.Errorf("%s: timer message at commitlog offset %d: %w: %w", StageEnqueueGet, u.Offset,
				corruption.ErrStop, commitlog.ErrCorrupt))
		}
		st.ReportCorruption(e.svc.opts.Logger, corruption.Range{File: corruption.FileCommitLog,
			Path: st.CommitLog.Dir(), From: u.Offset, To: u.Offset + int64(u.Size) + commitlog.EntryOverhead,
			Reason: "stored timer message fails its checksum", Action: "timer skipped"})
	}
	return false
}

// unreadableReason is the skipped-metric reason for a unit without record.
func unreadableReason(s storage.UnitState) string {
	switch s {
	case storage.UnitHole:
		return "lost"
	case storage.UnitRecordDamaged:
		return "corrupt"
	default:
		return "unreadable"
	}
}

// timerOf turns one timer message (the stored record) into a Timer; reason
// is non-empty when it is unusable.
func timerOf(rec []byte, off int64, queueOffset int64) (timerwheel.Timer, string) {
	props, err := message.PeekProperties(rec)
	if err != nil {
		return timerwheel.Timer{}, "undecodable"
	}
	// One scan, no strings (last occurrence wins, as LookupProperty).
	var out, del, uniq, realTopic []byte
	for rest := props; len(rest) > 0; {
		k, v, next, ok := message.NextProperty(rest)
		rest = next
		if !ok {
			continue
		}
		switch string(k) {
		case message.PropTimerOutMS:
			out = v
		case message.PropTimerDelUniqKey:
			del = v
		case message.PropUniqKey:
			uniq = v
		case message.PropRealTopic:
			realTopic = v
		}
	}
	due, err := strconv.ParseInt(string(out), 10, 64)
	if err != nil || due < 0 || due > timerwheel.MaxDeliverMs {
		return timerwheel.Timer{}, "bad_timer_out_ms"
	}
	t := timerwheel.Timer{DeliverMs: due, CommitLogOffset: off, Size: int32(len(rec)), Kind: timerwheel.KindNormal,
		QueueOffset: queueOffset}
	if len(del) > 0 {
		t.Kind, t.KeyHash = timerwheel.KindCancel, timerwheel.HashKey(string(del))
	} else if len(uniq) > 0 {
		t.KeyHash = timerwheel.KeyHashBytes(realTopic, uniq)
	}
	if t.Validate() != nil {
		return timerwheel.Timer{}, "invalid" // Add would refuse the whole batch
	}
	return t, ""
}

// enqueuePut adds timer batches to the wheel.
type enqueuePut struct{ svc *Service }

// Receive implements actor.Actor.
func (e *enqueuePut) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if e.svc.started(StageEnqueuePut) {
			e.svc.restartEnqueue("enqueue_put restarted")
		}
	case *enqBatch:
		svc := e.svc
		if m.epoch != svc.enqEpoch.Load() {
			return // from before a restart: enqueue_get re-reads it
		}
		if svc.opts.Faults != nil {
			// Fail mid-batch: half of it is already in the wheel.
			if half := len(m.timers) / 2; half > 0 {
				if err := svc.opts.Wheel.Add(m.timers[:half], svc.opts.Now().UnixMilli()); err != nil {
					panic(err)
				}
			}
			svc.opts.Faults.Hit(StageEnqueuePut)
		}
		if err := svc.opts.Wheel.Add(m.timers, svc.opts.Now().UnixMilli()); err != nil {
			// A failed store pauses the timers (the batch is read again after
			// the reopen); any other error restarts us, and enqueue resumes
			// from the wheel's position.
			svc.enqInFly.Add(-1)
			svc.storeFailed(StageEnqueuePut, err)
			return
		}
		svc.dirty.Store(true)
		svc.enqInFly.Add(-1)
		svc.send(StageEnqueueGet, enqDone{})
		svc.KickDequeue()
	}
}
