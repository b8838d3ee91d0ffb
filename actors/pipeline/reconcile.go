package pipeline

import (
	"fmt"
	"slices"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// reconcile brings the state derived from the CommitLog back in line with
// what the CommitLog holds after recovery, before any stage starts
// (docs/architecture.md, "The durable end"; docs/operations.md,
// "Recovery"). Every derived position is a claim to check against the
// recovered log, never a place to read from; each one found claiming more
// is corrected and recorded in Store.Corrections (logged, counted in
// wheelmq_store_reconciled_total, shown on /healthz until acknowledged).
// A loss of the CommitLog's tail (an OS crash or power cut under async
// flush, damage, a restored backup, a hand-cut file) may leave positions
// that claim more than it holds; the queue offsets above each queue's end
// are then handed out again to new messages, so a position left above the
// end would skip them.
//
// storage.Open has cut consume-queue units past the end, the dispatch
// checkpoint was clamped to it (reconcileCheckpoints, before the dispatch
// start offset is computed), and the index cuts its entries above it.
// Here, against the queue ends (consume queues plus the records not yet
// dispatched):
//   - the timer wheel's enqueue position is rewound to the timer queue's
//     end (the wheel's entries that named lost messages are dropped when
//     they come due, by the check of each released timer against its
//     record);
//   - consumer offsets are clamped to their queue's end (the POP
//     journal's replay start among them);
//   - the transaction state's half-queue position is clamped to the half
//     queue's end, and what it holds about half messages from there on
//     (open transactions, ends seen ahead) is dropped: those half messages
//     are gone, and their queue offsets belong to new ones.
func (p *Pipeline) reconcile() error {
	ends, err := p.store.QueueEnds(p.store.Dispatched.Load())
	if err != nil {
		return fmt.Errorf("reconcile: %w", storage.Unreadable(p.store.Dir, err))
	}
	end := ends.End(timer.Topic, 0)
	if was := p.wheel.RewindEnqueue(end); was > end-1 {
		p.correct(storage.Correction{What: storage.FixTimerEnqueue, Subject: timer.Topic + "/0", From: was + 1, To: end})
	}
	if err := p.reconcileOffsets(ends); err != nil {
		return err
	}
	return p.reconcileTransactions(ends)
}

// reconcileOffsets clamps every consumer offset to its queue's end.
func (p *Pipeline) reconcileOffsets(ends storage.QueueEnds) error {
	st, log := p.store, p.cfg.Logger
	table, err := meta.LoadOffsets(st.FS, st.OffsetsPath(), meta.WithLogger(log))
	if err != nil {
		return fmt.Errorf("reconcile consumer offsets: %w", err)
	}
	changed := 0
	for key, queues := range table {
		topic, group, ok := meta.SplitOffsetKey(key)
		if !ok {
			continue
		}
		for qid, off := range queues {
			if end := ends.End(topic, qid); off > end {
				what := storage.FixConsumerOffset
				if group == pop.JournalGroup {
					what = storage.FixPOPJournal // the journal's replay start (actors/pop, compact.go)
				}
				p.correct(storage.Correction{What: what, Subject: fmt.Sprintf("%s@%s/%d", topic, group, qid), From: off, To: end})
				queues[qid] = end
				changed++
			}
		}
	}
	if changed == 0 {
		return nil
	}
	if err := meta.SaveOffsets(st.FS, st.OffsetsPath(), table); err != nil {
		return fmt.Errorf("reconcile consumer offsets: %w", err)
	}
	return nil
}

// reconcileTransactions clamps the transaction state to the half queue.
func (p *Pipeline) reconcileTransactions(ends storage.QueueEnds) error {
	st, log := p.store, p.cfg.Logger
	ts, found, err := meta.LoadTransactionState(st.FS, st.TransactionsPath(), meta.WithLogger(log))
	if err != nil || !found {
		return err // the transaction stage reports a bad file itself
	}
	end := ends.End(meta.TopicTransHalf, 0)
	if ts.HalfNext <= end && (len(ts.Pending) == 0 || ts.Pending[len(ts.Pending)-1].QueueOffset < end) &&
		(len(ts.EndedAhead) == 0 || ts.EndedAhead[len(ts.EndedAhead)-1] < end) && ts.ScanFrom <= st.CommitLog.MaxOffset() {
		return nil
	}
	if dropped := countFrom(ts.Pending, end) + countAbove(ts.EndedAhead, end); ts.HalfNext > end || dropped > 0 {
		p.correct(storage.Correction{What: storage.FixTransaction, Subject: meta.TopicTransHalf + "/0",
			From: ts.HalfNext, To: min(ts.HalfNext, end), Dropped: int64(dropped)})
	}
	if clEnd := st.CommitLog.MaxOffset(); ts.ScanFrom > clEnd {
		p.correct(storage.Correction{What: storage.FixTransaction, Subject: "scan_from", From: ts.ScanFrom, To: clEnd})
	}
	ts.HalfNext = min(ts.HalfNext, end)
	ts.ScanFrom = min(ts.ScanFrom, st.CommitLog.MaxOffset())
	ts.Pending = slices.DeleteFunc(ts.Pending, func(t meta.PendingTransaction) bool { return t.QueueOffset >= end })
	ts.EndedAhead = slices.DeleteFunc(ts.EndedAhead, func(q int64) bool { return q >= end })
	if err := meta.SaveTransactionState(st.FS, st.TransactionsPath(), ts); err != nil {
		return fmt.Errorf("reconcile transactions: %w", err)
	}
	return nil
}

// countFrom counts the pending transactions at or above the half queue's
// end end.
func countFrom(ts []meta.PendingTransaction, end int64) int {
	n := 0
	for _, t := range ts {
		if t.QueueOffset >= end {
			n++
		}
	}
	return n
}

// countAbove counts the queue offsets at or above end.
func countAbove(qs []int64, end int64) int {
	n := 0
	for _, q := range qs {
		if q >= end {
			n++
		}
	}
	return n
}

// reconcileCheckpoints clamps the CommitLog offsets of config/checkpoint
// (the dispatch checkpoint, the timer dequeue side's replay scan start) to
// the recovered log's end and persists them, before the dispatch start
// offset is computed from the first: a checkpoint left past the end would
// be resumed from once new records fill the log there, in the middle of a
// record.
func (p *Pipeline) reconcileCheckpoints() error {
	st := p.store
	cp, err := st.LoadCheckpoint()
	if err != nil {
		return nil // dispatch.StartOffset reports it and re-dispatches the whole log
	}
	end := st.CommitLog.MaxOffset()
	for _, k := range []struct{ key, what string }{
		{dispatch.CheckpointKey, storage.FixDispatchCheckpoint},
		{timer.ReplayCheckpointKey, storage.FixTimerAck},
	} {
		v, ok := cp.Get(k.key)
		if !ok || v <= end {
			continue
		}
		if err := meta.UpdateCheckpoint(st.FS, st.CheckpointPath(), k.key, end); err != nil {
			return fmt.Errorf("reconcile: %s checkpoint: %w", k.key, err)
		}
		p.correct(storage.Correction{What: k.what, From: v, To: end})
	}
	return nil
}

// correct records c (with the CommitLog's end) in Store.Corrections.
func (p *Pipeline) correct(c storage.Correction) {
	c.CommitLogEnd = p.store.CommitLog.MaxOffset()
	p.store.Corrections.Record(p.cfg.Logger, c)
}
