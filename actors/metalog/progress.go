package metalog

import (
	"fmt"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// Progress is how far the stage has applied the metadata log, readable
// from any goroutine. A stage that must not act before the replicated
// metadata is in (the POP engine after a promotion: the request modes set
// by SET_MESSAGE_REQUEST_MODE decide which pulls it serves) asks
// AppliedBelow with the CommitLog end it works from.
//
// The stage publishes a consume-queue cursor of metarec.Topic below which
// every record was applied and every owning stage that answers (topics,
// groups, the POP engine's modes) answered; the offsets stage answers
// nothing, but a message sent to it after AppliedBelow said yes is behind
// the Apply in its mailbox. The zero value is not usable: NewProgress.
type Progress struct {
	store  *storage.Store
	cursor atomic.Int64 // -1 until the stage started
}

// NewProgress returns the progress of a stage over store's metadata log
// (pass it in Options.Progress).
func NewProgress(store *storage.Store) *Progress {
	p := &Progress{store: store}
	p.cursor.Store(-1)
	return p
}

// publish raises the cursor to next (never lowers it: a restarted stage
// applies again from its saved cursor what it had applied already).
func (p *Progress) publish(next int64) {
	if p == nil {
		return
	}
	for cur := p.cursor.Load(); cur < next && !p.cursor.CompareAndSwap(cur, next); cur = p.cursor.Load() {
	}
}

// Cursor is the published consume-queue cursor (-1: the stage has not
// started).
func (p *Progress) Cursor() int64 { return p.cursor.Load() }

// AppliedBelow reports whether every metadata record at a CommitLog
// position below end has been applied: the dispatch stage has indexed the
// CommitLog up to end, and the published cursor is past the last record
// below end. It reads at most one consume-queue unit.
func (p *Progress) AppliedBelow(end int64) (bool, error) {
	c := p.cursor.Load()
	if c < 0 {
		return false, nil
	}
	// Dispatched is stored after the queues were appended: every record
	// below d is in the queue whose end is read next.
	if d := p.store.Dispatched.Load(); d < end {
		return false, nil
	}
	q := p.store.Queues.Lookup(metarec.Topic, 0)
	if q == nil || c >= q.MaxOffset() {
		return true, nil
	}
	units, err := q.Read(c, 1)
	if err != nil {
		return false, fmt.Errorf("metalog progress: read %s at %d: %w", metarec.Topic, c, err)
	}
	// The queue is in CommitLog order: the first record not applied is at
	// or past end, so every one below end is applied.
	return len(units) > 0 && units[0].Offset >= end, nil
}
