package storage

import (
	"errors"
	"fmt"
	"io"

	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
)

// DurableEnd says how far the CommitLog survives a crash: every record that
// ends at or below DurableEnd() is there after an operating-system crash or
// a power cut, anything above may be gone.
//
// It is the one rule of wheelmq's derived state (docs/architecture.md,
// "The durable end"): nothing derived from the CommitLog is made durable
// past it, so that no acknowledgement, position or entry that survives a
// crash refers to records that did not. On one broker it is the CommitLog's
// flushed offset; replication swaps in the offset its replicas confirmed
// (Store.SetDurableEnd).
type DurableEnd interface {
	// DurableEnd returns the CommitLog offset below which everything is
	// durable. Safe from any goroutine; it never decreases.
	DurableEnd() int64
}

// DurableEnd returns the CommitLog offset below which everything survives a
// crash (see the DurableEnd interface). Safe from any goroutine.
func (s *Store) DurableEnd() int64 {
	if d := s.durable.Load(); d != nil {
		return (*d).DurableEnd()
	}
	return s.CommitLog.FlushedOffset()
}

// DurableLogEnd is the durable end, at most the CommitLog's end: the offset
// up to which the dispatch stage indexes the log now (under replication it
// waits for the replicas' confirmation), so what a stage that reads consume
// queues at start (the timer's catch-up, the POP journal) can wait for.
func (s *Store) DurableLogEnd() int64 {
	return min(s.DurableEnd(), s.CommitLog.MaxOffset())
}

// SetDurableEnd replaces what DurableEnd reports (nil: the CommitLog's
// flushed offset). Call it before the stages start.
func (s *Store) SetDurableEnd(d DurableEnd) {
	if d == nil {
		s.durable.Store(nil)
		return
	}
	s.durable.Store(&d)
}

// QueueEnds is, per queue, one past the highest queue offset the
// CommitLog holds (see Store.QueueEnds).
type QueueEnds map[consumequeue.QueueID]int64

// End returns the end of topic/queueID (0 for a queue the store does not
// hold).
func (e QueueEnds) End(topic string, queueID int32) int64 {
	return e[consumequeue.QueueID{Topic: topic, QueueID: queueID}]
}

// QueueEnds returns, for every queue, one past the highest queue offset the
// CommitLog holds: the consume queue's end, or the queue offset after the
// last record of that queue not yet dispatched (one scan from from, the
// dispatcher's resume position), whichever is larger. Records the scan
// cannot read or decode are passed over. A derived position that claims
// more of a queue than this (after a crash cut the CommitLog's tail) is
// rewound to it at start (actors/pipeline's reconcile).
func (s *Store) QueueEnds(from int64) (QueueEnds, error) {
	ends := QueueEnds{}
	for _, id := range s.Queues.Queues() {
		if q := s.Queues.Lookup(id.Topic, id.QueueID); q != nil {
			ends[id] = q.MaxOffset()
		}
	}
	cl := s.CommitLog
	// from is a claim, not a place to read: a checkpoint past the log's end
	// (its tail was lost) scans nothing.
	off := min(max(from, cl.MinOffset()), cl.MaxOffset())
	for {
		rec, next, err := cl.Read(off)
		if errors.Is(err, io.EOF) {
			return ends, nil
		}
		if errors.Is(err, commitlog.ErrCorrupt) {
			to, nerr := cl.NextValid(next)
			if nerr != nil {
				return ends, fmt.Errorf("queue ends: skip damage at %d: %w", next, nerr)
			}
			s.log.Warn().Err(err).Int64("from", next).Int64("to", to).
				Msg("queue ends: passing over a damaged commitlog span (its records' queue offsets are unknown)")
			off = to
			continue
		}
		if err != nil {
			return ends, fmt.Errorf("queue ends: read at %d: %w", off, err)
		}
		off = next
		topic, err := message.PeekTopic(rec)
		if err != nil {
			continue
		}
		id := consumequeue.QueueID{Topic: topic, QueueID: message.PeekQueueID(rec)}
		if qo := message.PeekQueueOffset(rec); qo+1 > ends[id] {
			ends[id] = qo + 1
		}
	}
}
