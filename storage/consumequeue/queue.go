package consumequeue

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// unitFile is one open unit file.
type unitFile struct {
	base int64  // logical offset of the file's first unit
	path string // full path
	f    vfs.File
}

// Queue is one consume queue. See the package documentation for the
// concurrency rules.
type Queue struct {
	id  QueueID
	dir string
	upf int64 // units per file
	fs  vfs.FS
	log zerolog.Logger

	// files guards the file list. The writer changes it under the write
	// lock; readers look files up under the read lock, then pread.
	files struct {
		sync.RWMutex
		list []*unitFile // contiguous: list[i].base = list[0].base + i*upf
	}
	// firstPlus1 is list[0].base+1, 0 without files: set under the files
	// write lock whenever the list changes (publishFirstLocked), so that
	// MinOffset takes no lock (a reader holds the read lock across its
	// pread, and a waiting writer would hold MinOffset behind that I/O).
	firstPlus1 atomic.Int64

	maxOffset atomic.Int64 // units written = next logical offset; published after the write
	closed    atomic.Bool
	cutAtOpen int64 // bytes recovery cut from the tail (set before the queue is shared)
	// trimmed is the logical minimum set by TrimBelow (0 until then); the
	// queue's minimum is the larger of it and the first file's base.
	trimmed atomic.Int64

	// w is owned by the single writer (Append, TruncateAbove).
	w struct {
		last    Unit // last unit in the queue, for the ordering check
		hasLast bool
		buf     []byte
	}

	// synced serializes Sync and TruncateAbove and records the logical
	// offset below which everything is fsynced.
	synced struct {
		sync.Mutex
		offset int64
	}

	// dirSync lists the directories whose entries for this queue (its
	// directory, its files) are not fsynced yet: creating a queue or a
	// file leaves that to the next Sync, which does it before the files,
	// so a new queue costs its first unit no directory fsyncs (a burst of
	// deliveries to new queues would otherwise wait for several each).
	// What Sync has not made durable is not relied on: the dispatcher
	// persists its checkpoint only after Sync.
	dirSync struct {
		sync.Mutex
		dirs []string
	}

	// fail holds the sticky error after a failed fsync or rollback.
	fail struct {
		sync.Mutex
		err error
	}
}

// ID returns the queue's topic and queue id.
func (q *Queue) ID() QueueID { return q.id }

// CutAtOpen returns the bytes recovery cut from the queue's tail when it was
// opened (0: none). Units cut below the dispatcher's checkpoint must be
// dispatched again from the CommitLog.
func (q *Queue) CutAtOpen() int64 { return q.cutAtOpen }

// MaxOffset returns the number of units written: the next logical offset.
// Safe from any goroutine.
func (q *Queue) MaxOffset() int64 { return q.maxOffset.Load() }

// MinOffset returns the logical offset of the first stored unit. Safe from
// any goroutine; it takes no lock (an event loop may call it).
func (q *Queue) MinOffset() int64 {
	first := q.firstPlus1.Load() - 1
	if first < 0 {
		return q.maxOffset.Load()
	}
	return max(first, q.trimmed.Load())
}

// publishFirstLocked records the first file's base for MinOffset; call it
// with the files write lock held after every change of the list.
func (q *Queue) publishFirstLocked() {
	if len(q.files.list) == 0 {
		q.firstPlus1.Store(0)
		return
	}
	q.firstPlus1.Store(q.files.list[0].base + 1)
}

// pin returns the file holding logical offset off with the file list
// read-locked, so that neither Reopen nor a close can close it while the
// caller reads it. On success the caller preads and then calls unpin; it
// must not take q.files again in between. On error nothing is held.
func (q *Queue) pin(off int64) (*unitFile, error) {
	q.files.RLock()
	if q.closed.Load() {
		q.files.RUnlock()
		return nil, ErrClosed
	}
	if len(q.files.list) == 0 || off < q.files.list[0].base {
		q.files.RUnlock()
		return nil, ErrOutOfRange
	}
	i := (off - q.files.list[0].base) / q.upf
	if i >= int64(len(q.files.list)) {
		q.files.RUnlock()
		return nil, ErrOutOfRange
	}
	return q.files.list[i], nil
}

// unpin releases what pin took.
func (q *Queue) unpin() { q.files.RUnlock() }

// Read returns up to max units starting at logical offset from. It returns
// no units at MaxOffset and ErrOutOfRange outside [MinOffset, MaxOffset].
// Safe for concurrent use, also with Append.
func (q *Queue) Read(from int64, max int) ([]Unit, error) {
	return q.ReadAppend(nil, from, max)
}

// maxPooledUnitBuf is the largest read buffer kept for reuse.
const maxPooledUnitBuf = 64 << 10

// unitBufs recycles ReadAppend's read buffers.
var unitBufs = sync.Pool{New: func() any { return new([]byte) }}

// ReadAppend is Read appending the units to dst, for a reader that reuses
// its slice: it allocates nothing when dst has room.
func (q *Queue) ReadAppend(dst []Unit, from int64, max int) ([]Unit, error) {
	if q.closed.Load() {
		return dst, fmt.Errorf("consumequeue read %s: %w", q.id, ErrClosed)
	}
	limit := q.maxOffset.Load()
	if from < q.MinOffset() || from > limit {
		return dst, fmt.Errorf("consumequeue read %s at %d (max %d): %w", q.id, from, limit, ErrOutOfRange)
	}
	if max <= 0 || from == limit {
		return dst, nil
	}
	end := limit
	if int64(max) < limit-from {
		end = from + int64(max)
	}
	if dst == nil {
		dst = make([]Unit, 0, end-from)
	}
	buf := unitBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledUnitBuf {
			unitBufs.Put(buf)
		}
	}()
	for pos := from; pos < end; {
		n, cut, err := q.readInto(pos, end, buf, &dst)
		if err != nil || cut {
			return dst, err // cut: by a concurrent TruncateAbove
		}
		pos += n
	}
	return dst, nil
}

// readInto decodes the units from pos up to end or the end of pos's file
// (pinned meanwhile) into out, and returns how many it covered and whether
// the file was shorter than that.
func (q *Queue) readInto(pos, end int64, buf *[]byte, out *[]Unit) (int64, bool, error) {
	uf, err := q.pin(pos)
	if err != nil {
		return 0, false, fmt.Errorf("consumequeue read %s at %d: %w", q.id, pos, err)
	}
	defer q.unpin()
	n := min(end, uf.base+q.upf) - pos
	if int64(cap(*buf)) < n*UnitSize {
		*buf = make([]byte, n*UnitSize)
	}
	b := (*buf)[:n*UnitSize]
	k, err := uf.f.ReadAt(b, (pos-uf.base)*UnitSize)
	for i := 0; i+UnitSize <= k; i += UnitSize {
		*out = append(*out, decodeUnit(b[i:]))
	}
	if errors.Is(err, io.EOF) {
		return n, true, nil
	}
	if err != nil {
		return n, false, fmt.Errorf("consumequeue read %s: %w", uf.path, err)
	}
	return n, false, nil
}

// readUnit reads the unit at logical offset off.
func (q *Queue) readUnit(off int64) (Unit, error) {
	uf, err := q.pin(off)
	if err != nil {
		return Unit{}, fmt.Errorf("consumequeue read %s at %d: %w", q.id, off, err)
	}
	defer q.unpin()
	var b [UnitSize]byte
	if _, err := uf.f.ReadAt(b[:], (off-uf.base)*UnitSize); err != nil {
		return Unit{}, fmt.Errorf("consumequeue read %s at %d: %w", uf.path, off-uf.base, err)
	}
	return decodeUnit(b[:]), nil
}

// LastUnit returns the last unit of the queue, or false if it is empty.
// Safe from any goroutine.
func (q *Queue) LastUnit() (Unit, bool) {
	limit := q.maxOffset.Load()
	if limit <= q.MinOffset() {
		return Unit{}, false
	}
	u, err := q.readUnit(limit - 1)
	if err != nil {
		return Unit{}, false
	}
	return u, true
}

// SearchByPhysOffset returns the logical offset of the first unit whose
// commit-log offset is >= phys, or MaxOffset if there is none (binary
// search: units are ordered by commit-log offset). Safe from any goroutine.
func (q *Queue) SearchByPhysOffset(phys int64) (int64, error) {
	lo, hi := q.MinOffset(), q.maxOffset.Load()
	for lo < hi {
		mid := lo + (hi-lo)/2
		u, err := q.readUnit(mid)
		if err != nil {
			return 0, err
		}
		if u.Offset < phys {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// failure returns the sticky error, if any.
func (q *Queue) failure() error {
	q.fail.Lock()
	defer q.fail.Unlock()
	return q.fail.err
}

// setFailed records the first sticky error.
func (q *Queue) setFailed(err error) {
	q.fail.Lock()
	defer q.fail.Unlock()
	if q.fail.err == nil {
		q.fail.err = err
		q.log.Error().Err(err).Str("queue", q.id.String()).Msg("consumequeue: failed, refusing writes until reopened")
	}
}

// writable returns an error if the queue cannot take writes.
func (q *Queue) writable(op string) error {
	if q.closed.Load() {
		return fmt.Errorf("consumequeue %s %s: %w", op, q.id, ErrClosed)
	}
	if err := q.failure(); err != nil {
		return fmt.Errorf("consumequeue %s %s: %w: %w", op, q.id, ErrFailed, err)
	}
	return nil
}

// close fsyncs (unless failed or sync is false) and closes the queue's
// files. Holding q.synced keeps a concurrent Sync off the files being closed.
func (q *Queue) close(sync bool) error {
	q.synced.Lock()
	defer q.synced.Unlock()
	var errs []error
	if sync && !q.closed.Load() && q.failure() == nil {
		if err := q.syncLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	q.files.Lock()
	defer q.files.Unlock()
	q.closed.Store(true) // under the lock: no reader holds a file being closed (see pin)
	for _, uf := range q.files.list {
		if err := uf.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("consumequeue close %s: %w", uf.path, err))
		}
	}
	q.files.list = nil
	q.publishFirstLocked()
	return errors.Join(errs...)
}
