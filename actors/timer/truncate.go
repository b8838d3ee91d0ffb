package timer

import (
	"errors"
	"fmt"
	"math"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// logCut asks dequeue_put to reconcile the dequeue side with a CommitLog
// cut at above.
type logCut struct {
	above int64
	done  func(error)
}

// Fail implements stage.Failable.
func (m *logCut) Fail(err error) {
	if m.done != nil {
		m.done(err)
	}
}

// errNoDequeuePut answers a Truncated before the stages run.
var errNoDequeuePut = errors.New("timer service: dequeue_put is not running")

// Truncated tells the timer service that the CommitLog was truncated at
// above: a replica's log diverged from the new master's (its tail was
// never confirmed) and the receiver cut it to the consistent point, so
// the bytes from above on are the new master's, not this node's. The
// dequeue side then forgets what it took from the cut tail:
//
//   - batches acknowledged because of write-backs that lay above the cut
//     (this node fired them as master, or found its own unconfirmed copy)
//     are not delivered any more: the wheel's acknowledged position goes
//     back to the first of them (timerwheel.Store.RewindAck; it was never
//     durable, see ackLog) and they are released again, in shadow mode on
//     a replica, waiting for the new master's copies;
//   - the copy scan, the replay scan start (in memory and the persisted
//     timer_replay_from) and the copies found at or above the cut go back
//     to above, so the new master's copies, which arrive there, are found.
//
// Without it a node that fired timers as master, lost that tail and later
// became master again fired them a second time: its scan positions lay
// past the new master's copies. done (may be nil) is called once the
// dequeue side is reconciled, on dequeue_put's goroutine (it must not
// block), or with an error when the stage is not running. Safe from any
// goroutine; call it after the truncation, before or after the new bytes
// arrive.
func (s *Service) Truncated(above int64, done func(error)) {
	m := &logCut{above: above, done: done}
	st := s.stage(StageDequeuePut)
	if st == nil {
		m.Fail(errNoDequeuePut)
		return
	}
	st.Send(m)
}

// truncated serves a logCut (see Service.Truncated).
func (d *dequeuePut) truncated(m *logCut) {
	svc, above := d.svc, m.above
	log := svc.opts.Logger.Warn().Int64("above", above)
	var err error
	if from, ok := svc.acks.cut(above); ok {
		log = log.Str("ack_rewound_to", from.String())
		if err = svc.opts.Wheel.RewindAck(from); errors.Is(err, timerwheel.ErrFailed) {
			svc.storeFailed(StageDequeuePut, err) // the reopen resumes from the durable position, below from
		}
	}
	// Nothing of the old epoch is acknowledged from here on: the rewind
	// below re-releases it.
	d.queue = nil
	d.awaiting = map[string]*pendingBatch{}
	clear(d.early)
	dropped := 0
	for id, off := range d.replayed {
		if off >= above {
			delete(d.replayed, id)
			dropped++
		}
	}
	for id, c := range d.cancels {
		if c.off >= above {
			delete(d.cancels, id)
		}
	}
	d.scanned = min(d.scanned, above)
	d.scanFrom = min(d.scanFrom, above)
	svc.replayMu.Lock()
	if a := svc.ackedOff.Load(); a > above {
		svc.ackedOff.Store(above)
	}
	if cerr := clampReplayFrom(svc, above); cerr != nil {
		err = errors.Join(err, cerr)
	}
	svc.replayMu.Unlock()
	if pin := svc.replayPin.Load(); pin != math.MaxInt64 && pin > above {
		svc.replayPin.Store(above)
	}
	log.Int("copies_forgotten", dropped).Msg("timer dequeue: commitlog truncated; forgetting the write-backs of the cut tail")
	svc.restartDequeue("commitlog truncated")
	if m.done != nil {
		m.done(err)
	}
}

// clampReplayFrom lowers the persisted replay scan start to above, so that
// a restart rescans the new master's bytes. replayMu held.
func clampReplayFrom(svc *Service, above int64) error {
	st := svc.opts.Store
	cp, err := st.LoadCheckpoint()
	if err != nil {
		return nil // unreadable: a restart scans from the log's start or not at all (resync)
	}
	if from, ok := cp.Values[ReplayCheckpointKey]; !ok || from <= above {
		return nil
	}
	if err := meta.UpdateCheckpoint(st.FS, st.CheckpointPath(), ReplayCheckpointKey, above); err != nil {
		return fmt.Errorf("timer replay checkpoint after a truncation: %w", err)
	}
	return nil
}

// lostEntry records a wheel entry dropped when it came due because its
// message is not in the CommitLog (reason "unreadable" or "stale") and it
// names an offset at or past the log's end at open: the entry survived a
// loss of the log's tail (storage.FixTimerEntry).
func (s *Service) lostEntry(t timerwheel.Timer, reason string) {
	st := s.opts.Store
	if (reason != "unreadable" && reason != "stale") || t.CommitLogOffset < st.OpenedEnd || st.Corrections == nil {
		return
	}
	st.Corrections.Record(s.opts.Logger, storage.Correction{What: storage.FixTimerEntry,
		Subject: fmt.Sprintf("due %d", t.DeliverMs), From: t.CommitLogOffset, To: -1, CommitLogEnd: st.OpenedEnd})
}
