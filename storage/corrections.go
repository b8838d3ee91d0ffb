package storage

import (
	"slices"
	"sync"

	"github.com/rs/zerolog"
)

// The kinds of Correction: the derived positions a start checks against the
// recovered CommitLog (the label values of wheelmq_store_reconciled_total).
const (
	// FixDispatchCheckpoint: the dispatch checkpoint past the log's end.
	FixDispatchCheckpoint = "dispatch_checkpoint"
	// FixConsumeQueue: consume-queue units naming records past the end.
	FixConsumeQueue = "consume_queue"
	// FixIndex: the message index's position past the end.
	FixIndex = "index"
	// FixTimerEnqueue: the timer wheel's enqueue position past the timer
	// queue's end.
	FixTimerEnqueue = "timer_enqueue"
	// FixTimerEntry: a wheel entry whose message the log lost, dropped
	// when it came due.
	FixTimerEntry = "timer_entry"
	// FixTimerAck: the timer dequeue side's replay scan start past the end.
	FixTimerAck = "timer_ack"
	// FixPOPJournal: the POP journal's replay start past its queue's end.
	FixPOPJournal = "pop_journal"
	// FixTransaction: the transaction state past the half queue's end.
	FixTransaction = "transaction"
	// FixConsumerOffset: a consumer offset past its queue's end.
	FixConsumerOffset = "consumer_offset"
	// FixEpoch: replication epoch entries starting past the end.
	FixEpoch = "epoch"
)

// CorrectionKinds lists every kind of Correction, in a fixed order.
var CorrectionKinds = []string{FixDispatchCheckpoint, FixConsumeQueue, FixIndex, FixTimerEnqueue,
	FixTimerEntry, FixTimerAck, FixPOPJournal, FixTransaction, FixConsumerOffset, FixEpoch}

// Correction is one derived position that claimed more than the recovered
// CommitLog holds (its tail was lost: a crash under async flush, a restored
// backup, a hand-truncated log), and what the broker made of it.
type Correction struct {
	// What is one of CorrectionKinds.
	What string
	// Subject names the position ("" when there is one of its kind): a
	// queue, "group@topic/queue".
	Subject string
	// From is what the position claimed, To what it was set to (-1: the
	// entry was dropped).
	From, To int64
	// Dropped counts the entries dropped with it (consume-queue units).
	Dropped int64
	// CommitLogEnd is the recovered CommitLog's end.
	CommitLogEnd int64
}

// PendingCorrections is what Corrections holds of one kind since the last
// acknowledgement.
type PendingCorrections struct {
	// What is the kind.
	What string
	// Count is the number of corrections of the kind.
	Count int64
	// Last is the most recent one.
	Last Correction
}

// Corrections collects the corrections made since the process started:
// each is logged at warn, counted for good (Count) and held as pending
// until an operator acknowledges them (/healthz shows the pending ones).
// Safe from any goroutine.
type Corrections struct {
	mu      sync.Mutex
	total   map[string]int64              // guarded by mu
	pending map[string]PendingCorrections // guarded by mu
}

// NewCorrections returns an empty set.
func NewCorrections() *Corrections {
	return &Corrections{total: map[string]int64{}, pending: map[string]PendingCorrections{}}
}

// Record logs c on log (what, subject, from, to, dropped, commitlog_end),
// counts it and holds it as pending.
func (s *Corrections) Record(log zerolog.Logger, c Correction) {
	ev := log.Warn().Str("what", c.What).Int64("from", c.From).Int64("to", c.To).Int64("commitlog_end", c.CommitLogEnd)
	if c.Subject != "" {
		ev = ev.Str("subject", c.Subject)
	}
	if c.Dropped != 0 {
		ev = ev.Int64("dropped", c.Dropped)
	}
	ev.Msg("reconciled: a position derived from the commitlog claimed more than it holds; corrected")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total[c.What]++
	p := s.pending[c.What]
	p.What, p.Last = c.What, c
	p.Count++
	s.pending[c.What] = p
}

// Count returns how many corrections of what were made since the process
// started.
func (s *Corrections) Count(what string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total[what]
}

// Pending returns the corrections not yet acknowledged, one entry per kind
// in CorrectionKinds order.
func (s *Corrections) Pending() []PendingCorrections {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PendingCorrections, 0, len(s.pending))
	for _, p := range s.pending {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PendingCorrections) int {
		return slices.Index(CorrectionKinds, a.What) - slices.Index(CorrectionKinds, b.What)
	})
	return out
}

// Acknowledge clears the pending corrections (the counts stay) and returns
// how many there were.
func (s *Corrections) Acknowledge() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, p := range s.pending {
		n += p.Count
	}
	clear(s.pending)
	return n
}
