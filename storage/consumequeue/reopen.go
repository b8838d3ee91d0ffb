package consumequeue

import "fmt"

// Failed returns the queue's sticky error after a failed fsync or rollback
// (the queue then refuses writes until Reopen), or nil. Safe from any
// goroutine.
func (q *Queue) Failed() error { return q.failure() }

// Reopen recovers the queue in place, as a process restart would, without
// closing it for its readers: it opens the queue's files again with new
// handles, runs the load-time recovery on them (cutting a partial or
// insane tail), swaps them in, closes the old handles and clears the sticky
// error. It returns the queue's end before and after. A queue that got
// shorter lost units its readers may have seen; the dispatcher re-dispatches
// them from the CommitLog.
//
// Writer only (the dispatcher): not concurrent with Append or
// TruncateAbove. Readers may run concurrently: they pread under the file
// list's read lock, and the old handles are closed under its write lock.
// When Reopen fails the queue is left as it was (failed, readable).
func (q *Queue) Reopen() (before, after int64, err error) {
	q.synced.Lock() // keeps Sync off the files being swapped
	defer q.synced.Unlock()
	before = q.maxOffset.Load()
	if q.closed.Load() {
		return before, before, fmt.Errorf("consumequeue reopen %s: %w", q.id, ErrClosed)
	}
	fresh, err := openQueue(q.dir, q.id, q.upf, q.fs, q.log)
	if err != nil {
		return before, before, fmt.Errorf("consumequeue reopen %s: %w", q.id, err)
	}
	cause := q.failure()
	q.files.Lock()
	old := q.files.list
	q.files.list = fresh.files.list
	q.publishFirstLocked()
	after = fresh.maxOffset.Load()
	q.maxOffset.Store(after)
	q.w.last, q.w.hasLast = fresh.w.last, fresh.w.hasLast
	q.synced.offset = fresh.synced.offset
	for _, uf := range old { // no reader holds one under the write lock (see pin)
		if err := uf.f.Close(); err != nil {
			q.log.Warn().Err(err).Str("file", uf.path).Msg("consumequeue: closing an old handle after reopen")
		}
	}
	q.files.Unlock()
	q.fail.Lock()
	q.fail.err = nil
	q.fail.Unlock()
	q.log.Info().Str("queue", q.id.String()).AnErr("cause", cause).Int64("max_offset_before", before).
		Int64("max_offset", after).Msg("consumequeue: reopened")
	return before, after, nil
}

// FailedQueues lists the queues in their sticky failed state.
func (s *Store) FailedQueues() []*Queue {
	s.queues.RLock()
	defer s.queues.RUnlock()
	var out []*Queue
	for _, q := range s.queues.m {
		if q.Failed() != nil {
			out = append(out, q)
		}
	}
	return out
}
