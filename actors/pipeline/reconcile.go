package pipeline

import (
	"fmt"
	"slices"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// reconcile brings the state derived from the CommitLog back in line with
// what the CommitLog holds after recovery, before any stage starts
// (docs/architecture.md, "The durable end"). A crash that cut the
// CommitLog's tail (an OS crash or power cut under async flush, or
// damage) may leave positions that claim more than it holds; the queue
// offsets above each queue's end are then handed out again to new messages,
// so a position left above the end would skip them.
//
// storage.Open has cut consume-queue units past the end, the dispatcher
// resumes at most from the end, and the index cuts its entries above it.
// Here, against the queue ends (consume queues plus the records not yet
// dispatched):
//   - the timer wheel's enqueue position is rewound to the timer queue's
//     end (the wheel's entries that named lost messages are dropped when
//     they come due, by the check of each released timer against its
//     record);
//   - consumer offsets are clamped to their queue's end;
//   - the transaction state's half-queue position is clamped to the half
//     queue's end, and what it holds about half messages from there on
//     (open transactions, ends seen ahead) is dropped: those half messages
//     are gone, and their queue offsets belong to new ones.
func (p *Pipeline) reconcile() error {
	ends, err := p.store.QueueEnds(p.store.Dispatched.Load())
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	p.wheel.RewindEnqueue(ends.End(timer.Topic, 0))
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
				log.Warn().Str("topic", topic).Str("group", group).Int32("queue", qid).Int64("offset", off).
					Int64("queue_end", end).Msg("consumer offset past its queue's end (the CommitLog's tail was lost): clamped")
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
	log.Warn().Int64("half_next", ts.HalfNext).Int64("half_queue_end", end).Int64("scan_from", ts.ScanFrom).
		Int64("commitlog_end", st.CommitLog.MaxOffset()).
		Msg("transaction state past the half queue's end (the CommitLog's tail was lost): clamped")
	ts.HalfNext = min(ts.HalfNext, end)
	ts.ScanFrom = min(ts.ScanFrom, st.CommitLog.MaxOffset())
	ts.Pending = slices.DeleteFunc(ts.Pending, func(t meta.PendingTransaction) bool { return t.QueueOffset >= end })
	ts.EndedAhead = slices.DeleteFunc(ts.EndedAhead, func(q int64) bool { return q >= end })
	if err := meta.SaveTransactionState(st.FS, st.TransactionsPath(), ts); err != nil {
		return fmt.Errorf("reconcile transactions: %w", err)
	}
	return nil
}
