package consumequeue

import (
	"errors"
	"fmt"
)

// Trimming follows CommitLog retention (RocketMQ's CleanConsumeQueueService
// and correctMinOffset): once the CommitLog's oldest segments are deleted,
// the units pointing into them are useless. TrimBelow moves the queue's
// minimum to the first unit that still points into the CommitLog, and
// deletes the files holding only older units (never the last file, so the
// queue keeps its logical offsets even when every unit is gone). The
// minimum need not sit on a file boundary; it is not persisted: Open
// computes it again from the CommitLog's minimum (storage.Open).

// TrimResult reports what TrimBelow did.
type TrimResult struct {
	// MinOffset is the queue's minimum afterwards.
	MinOffset int64
	// Units is how far the minimum moved.
	Units int64
	// Files and Bytes count the unit files deleted.
	Files int
	Bytes int64
}

// TrimBelow drops the units whose commit-log offset is below clMin: the
// minimum moves to the first unit at or above it (MaxOffset when there is
// none) and every file wholly below the new minimum is deleted, except the
// last one. Writer only (the dispatch stage): not concurrent with Append,
// TruncateAbove or Reopen. Readers see either the old or the new minimum.
func (q *Queue) TrimBelow(clMin int64) (TrimResult, error) {
	if err := q.writable("trim"); err != nil {
		return TrimResult{}, err
	}
	q.synced.Lock()
	defer q.synced.Unlock()
	old := q.MinOffset()
	if old == q.maxOffset.Load() {
		return TrimResult{MinOffset: old}, nil
	}
	if u, err := q.readUnit(old); err == nil && u.Offset >= clMin {
		return TrimResult{MinOffset: old}, nil // the common case: nothing to trim
	}
	newMin, err := q.SearchByPhysOffset(clMin)
	if err != nil {
		return TrimResult{MinOffset: old}, fmt.Errorf("consumequeue trim %s below %d: %w", q.id, clMin, err)
	}
	res := TrimResult{MinOffset: max(old, newMin)}
	if newMin <= old {
		return res, nil
	}
	q.trimmed.Store(newMin)
	res.Units = newMin - old

	// Out of the list under the write lock: no reader is reading them (see
	// pin), so they can be closed at once.
	q.files.Lock()
	k := 0
	for k < len(q.files.list)-1 && q.files.list[k].base+q.upf <= newMin {
		k++
	}
	gone := append([]*unitFile(nil), q.files.list[:k]...)
	q.files.list = q.files.list[k:]
	q.publishFirstLocked()
	q.files.Unlock()

	var errs []error
	for _, uf := range gone {
		if n, err := uf.f.Size(); err == nil {
			res.Bytes += n
		}
		_ = uf.f.Close()
		if err := q.fs.Remove(uf.path); err != nil {
			errs = append(errs, fmt.Errorf("consumequeue trim remove %s: %w", uf.path, err))
			continue
		}
		res.Files++
	}
	// No directory fsync: a file that comes back after a power failure only
	// holds units below the minimum, which Open computes again.
	return res, errors.Join(errs...)
}

// firstBase is the logical offset of the first unit file (MaxOffset when
// there is none): the physical start of the queue, which can be below
// MinOffset after a trim.
func (q *Queue) firstBase() int64 {
	q.files.RLock()
	defer q.files.RUnlock()
	if len(q.files.list) == 0 {
		return q.maxOffset.Load()
	}
	return q.files.list[0].base
}

// StoreTrim reports what Store.TrimBelow did over every queue.
type StoreTrim struct {
	// Queues is the number of queues whose minimum moved.
	Queues int
	// Units, Files and Bytes are summed over the queues.
	Units int64
	Files int
	Bytes int64
}

// TrimBelow trims every queue below the CommitLog offset clMin (see
// Queue.TrimBelow). A queue that fails is reported and the others are
// still trimmed. Writer only.
func (s *Store) TrimBelow(clMin int64) (StoreTrim, error) {
	var out StoreTrim
	var errs []error
	for _, id := range s.Queues() {
		q := s.Lookup(id.Topic, id.QueueID)
		if q == nil {
			continue
		}
		r, err := q.TrimBelow(clMin)
		if err != nil {
			errs = append(errs, err)
		}
		if r.Units > 0 {
			out.Queues++
		}
		out.Units += r.Units
		out.Files += r.Files
		out.Bytes += r.Bytes
	}
	return out, errors.Join(errs...)
}
