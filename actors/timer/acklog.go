package timer

import (
	"sync"

	"github.com/wheelmq/wheelmq/timerwheel"
)

// ackLog holds the batches dequeue_put acknowledged whose write-backs may
// not be durable yet, oldest first. timer_flush makes the wheel's
// acknowledged position durable only up to the last batch whose
// write-backs lie below the CommitLog's durable end (storage.DurableEnd): a
// write-back is durable before its timer's acknowledgement is, so a crash
// that loses a write-back (async flush: the CommitLog is fsynced every
// 500 ms, the wheel every 20 ms) releases the timer again instead of
// losing it.
type ackLog struct {
	mu      sync.Mutex
	entries []ackEntry
}

// ackEntry is one acknowledged batch.
type ackEntry struct {
	from, to timerwheel.Cursor // the batch's positions (Batch.From, Batch.To)
	start    int64             // CommitLog end before its first write-back
	end      int64             // CommitLog end after its last one (0: it wrote none)
}

// acked appends a batch dequeue_put just acknowledged.
func (l *ackLog) acked(e ackEntry) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// durable drops the batches whose write-backs are all below durableEnd and
// returns the acknowledged position a flush may make durable (ok: the
// position changed or batches wait), and whether batches wait, with the
// CommitLog offset of the first waiting batch's first write-back.
func (l *ackLog) durable(durableEnd int64) (limit timerwheel.Cursor, ok bool, waiting bool, waitStart int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for n < len(l.entries) && l.entries[n].end <= durableEnd {
		n++
	}
	if n > 0 {
		limit, ok = l.entries[n-1].to, true
		l.entries = append(l.entries[:0], l.entries[n:]...)
	}
	if len(l.entries) > 0 {
		return l.entries[0].from, true, true, l.entries[0].start
	}
	return limit, ok, false, 0
}

// reset forgets every batch (the store was reopened: what was not
// durable is released again).
func (l *ackLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// cut drops the batches whose write-backs reach past above (the CommitLog
// was truncated there, so those write-backs are gone) and every batch
// after them, and returns where the first of them started: the timers
// acknowledged from there on are not delivered any more. ok is false when
// no batch was dropped. Batches no longer held here are durable, below
// the durable end, which a truncation never passes.
func (l *ackLog) cut(above int64) (from timerwheel.Cursor, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.entries {
		if e.end > above {
			from = e.from
			l.entries = l.entries[:i]
			return from, true
		}
	}
	return from, false
}
