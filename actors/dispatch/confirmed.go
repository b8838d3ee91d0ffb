package dispatch

import (
	"math"

	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// limit is the CommitLog offset dispatching may reach: the durable end
// (the confirmed offset) with Options.UpToDurableEnd, else no limit.
func (d *Dispatcher) limit() int64 {
	if !d.opts.UpToDurableEnd {
		return math.MaxInt64
	}
	return d.opts.Store.DurableEnd()
}

// unconfirmed keeps the records of a block that end at or below limit:
// it returns them, the offset to resume from (the first record left out,
// or next when all fit) and whether any was left out.
func unconfirmed(recs [][]byte, offs []int64, next, limit int64) ([][]byte, int64, bool) {
	for i, rec := range recs {
		if offs[i]+int64(len(rec))+commitlog.EntryOverhead > limit {
			return recs[:i], offs[i], true
		}
	}
	return recs, next, false
}

// Cut asks the dispatcher to drop everything derived from the CommitLog at
// or above Above: a replica whose log is truncated to Above (it diverged
// from the new master's) cuts every consume queue's units there and
// resumes dispatching from Above, so that no consumer is served a record
// the log no longer holds. Send it after the CommitLog was truncated and
// before new bytes are appended. The index stage cuts its own entries
// above the log's end (index.Options.Limit follows Store.Dispatched).
// Reply is called on the dispatcher's goroutine and must not block.
type Cut struct {
	Above int64
	Reply func(error)
}

// Fail implements stage.Failable.
func (c *Cut) Fail(err error) {
	if c.Reply != nil {
		c.Reply(err)
	}
}

// cut serves a Cut (the reconcile of a truncation: cutUndurableUnits at
// the new end, the position moved back to it).
func (d *Dispatcher) cut(m *Cut) {
	st := d.opts.Store
	cutUndurableUnits(st, m.Above, d.opts.Logger)
	d.queues = [8]cachedQueue{}
	if d.offset > m.Above {
		d.offset = m.Above
	}
	st.Dispatched.Store(d.offset)
	// The persisted checkpoint must not stay above the cut: a restart
	// would resume past records the new log holds there.
	perr := persist(st, d.offset, d.opts.Logger)
	if perr == nil {
		d.saved = d.offset
	}
	d.opts.Logger.Warn().Int64("above", m.Above).Int64("resume", d.offset).
		Msg("derived state cut: consume-queue units at or above the truncated commitlog end dropped")
	err := perr
	for _, id := range st.Queues.Queues() {
		if q := st.Queues.Lookup(id.Topic, id.QueueID); q != nil && q.Failed() != nil {
			err = q.Failed()
		}
	}
	if m.Reply != nil {
		m.Reply(err)
	}
	d.kicker.Kick()
}
