package consumequeue

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// maxKeptBuffer caps the write buffer kept between Append calls.
const maxKeptBuffer = 1 << 20

// Append writes units at the end of the queue (single writer: the
// dispatcher). Units must have Offset >= 0, Size > 0 (or HoleSize) and
// commit-log offsets strictly above the previous unit's (ErrInvalidUnit). Either all units are
// appended or none: on a write error the queue is truncated back and the
// wrapped error returned. Append does not fsync; see Sync.
func (q *Queue) Append(units ...Unit) error {
	if err := q.writable("append"); err != nil {
		return err
	}
	prev, hasPrev := q.w.last, q.w.hasLast
	for i, u := range units {
		if reason := checkUnit(u, prev, hasPrev); reason != "" {
			return fmt.Errorf("consumequeue append %s unit %d: %s: %w", q.id, i, reason, ErrInvalidUnit)
		}
		prev, hasPrev = u, true
	}
	if len(units) == 0 {
		return nil
	}
	start := q.maxOffset.Load()
	nfiles := q.fileCount()
	end, err := q.write(start, units)
	if err != nil {
		if rerr := q.rollback(start, nfiles); rerr != nil {
			q.setFailed(rerr)
			return fmt.Errorf("consumequeue append %s at %d: %w (rollback: %w)", q.id, start, err, rerr)
		}
		return fmt.Errorf("consumequeue append %s at %d: %w", q.id, start, err)
	}
	q.w.last, q.w.hasLast = prev, true
	q.maxOffset.Store(end)
	return nil
}

// write encodes units from logical offset pos on, creating files as needed,
// and returns the new end offset.
func (q *Queue) write(pos int64, units []Unit) (int64, error) {
	cur := q.lastFile()
	buf := q.w.buf[:0]
	chunkStart := pos
	for _, u := range units {
		if cur == nil || pos >= cur.base+q.upf {
			if err := q.writeChunk(cur, chunkStart, buf); err != nil {
				return 0, err
			}
			next, err := q.createFile(pos)
			if err != nil {
				return 0, err
			}
			cur, chunkStart, buf = next, pos, buf[:0]
		}
		buf = appendUnit(buf, u)
		pos++
	}
	if err := q.writeChunk(cur, chunkStart, buf); err != nil {
		return 0, err
	}
	if cap(buf) <= maxKeptBuffer {
		q.w.buf = buf[:0]
	}
	return pos, nil
}

// writeChunk pwrites encoded units starting at logical offset start.
func (q *Queue) writeChunk(uf *unitFile, start int64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	n, err := uf.f.WriteAt(buf, (start-uf.base)*UnitSize)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", uf.path, err)
	}
	return nil
}

// createFile creates the unit file starting at base and adds it to the
// list; the directory entry is fsynced by the next Sync.
func (q *Queue) createFile(base int64) (*unitFile, error) {
	if base%q.upf != 0 {
		return nil, fmt.Errorf("new file at unaligned offset %d: %w", base, ErrLayout)
	}
	path := filepath.Join(q.dir, fileName(base))
	f, err := q.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	q.deferDirSync(q.dir)
	uf := &unitFile{base: base, path: path, f: f}
	q.files.Lock()
	q.files.list = append(q.files.list, uf)
	q.publishFirstLocked()
	q.files.Unlock()
	return uf, nil
}

// rollback restores the queue to end offset pos with nfiles files.
func (q *Queue) rollback(pos int64, nfiles int) error {
	var errs []error
	if _, err := q.removeFiles(nfiles); err != nil {
		errs = append(errs, err)
	}
	if uf := q.lastFile(); uf != nil {
		if err := uf.f.Truncate((pos - uf.base) * UnitSize); err != nil {
			errs = append(errs, fmt.Errorf("truncate %s: %w", uf.path, err))
		}
	}
	return errors.Join(errs...)
}

// lastFile returns the last file, or nil if there is none.
func (q *Queue) lastFile() *unitFile {
	q.files.RLock()
	defer q.files.RUnlock()
	if len(q.files.list) == 0 {
		return nil
	}
	return q.files.list[len(q.files.list)-1]
}

// fileCount returns the number of files.
func (q *Queue) fileCount() int {
	q.files.RLock()
	defer q.files.RUnlock()
	return len(q.files.list)
}

// Sync fsyncs every unit appended so far. It may run concurrently with
// Append. A failed fsync is sticky (ErrFailed).
func (q *Queue) Sync() error {
	q.synced.Lock()
	defer q.synced.Unlock()
	return q.syncLocked()
}

// syncLocked is Sync. q.synced must be held.
func (q *Queue) syncLocked() error {
	if q.closed.Load() {
		return fmt.Errorf("consumequeue sync %s: %w", q.id, ErrClosed)
	}
	if err := q.failure(); err != nil {
		return fmt.Errorf("consumequeue sync %s: %w: %w", q.id, ErrFailed, err)
	}
	if err := q.syncDirs(); err != nil {
		q.setFailed(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	target := q.maxOffset.Load()
	if target <= q.synced.offset {
		return nil
	}
	for _, uf := range q.filesBetween(q.synced.offset, target) {
		if err := uf.f.Sync(); err != nil {
			err = fmt.Errorf("consumequeue sync %s: %w", uf.path, err)
			q.setFailed(err)
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
	}
	q.synced.offset = target
	return nil
}

// filesBetween returns the files holding units in [from, to).
func (q *Queue) filesBetween(from, to int64) []*unitFile {
	q.files.RLock()
	defer q.files.RUnlock()
	var out []*unitFile
	for _, uf := range q.files.list {
		if uf.base < to && uf.base+q.upf > from {
			out = append(out, uf)
		}
	}
	return out
}

// TruncateAbove drops every unit whose commit-log offset is >= physOffset
// (the CommitLog was cut there) and fsyncs the result. Writer only; not
// concurrent with Append. Readers racing with it may see fewer units.
func (q *Queue) TruncateAbove(physOffset int64) error {
	if err := q.writable("truncate"); err != nil {
		return err
	}
	q.synced.Lock()
	defer q.synced.Unlock()
	cut, err := q.SearchByPhysOffset(physOffset)
	if err != nil {
		return fmt.Errorf("consumequeue truncate %s: %w", q.id, err)
	}
	limit := q.maxOffset.Load()
	if cut >= limit {
		return nil
	}
	if err := q.truncateTo(cut); err != nil {
		q.setFailed(err)
		return fmt.Errorf("consumequeue truncate %s at %d: %w", q.id, cut, err)
	}
	q.log.Info().Str("queue", q.id.String()).Int64("phys_offset", physOffset).
		Int64("from", limit).Int64("to", cut).Msg("consumequeue: truncated above commit-log offset")
	return nil
}

// TruncateAt drops every unit from logical offset cut on and fsyncs the
// result: the dispatcher rebuilds a damaged queue from the CommitLog by
// cutting it at the first damaged unit and appending the units again.
// Writer only; not concurrent with Append. Readers racing with it may see
// fewer units.
func (q *Queue) TruncateAt(cut int64) error {
	if err := q.writable("truncate"); err != nil {
		return err
	}
	q.synced.Lock()
	defer q.synced.Unlock()
	limit := q.maxOffset.Load()
	if cut < q.MinOffset() || cut > limit {
		return fmt.Errorf("consumequeue truncate %s at %d (%d..%d): %w", q.id, cut, q.MinOffset(), limit, ErrOutOfRange)
	}
	if cut == limit {
		return nil
	}
	if err := q.truncateTo(cut); err != nil {
		q.setFailed(err)
		return fmt.Errorf("consumequeue truncate %s at %d: %w", q.id, cut, err)
	}
	return nil
}

// truncateTo cuts the queue to end at logical offset cut (>= MinOffset).
// q.synced must be held.
func (q *Queue) truncateTo(cut int64) error {
	first := q.firstBase()
	q.maxOffset.Store(cut)
	if q.synced.offset > cut {
		q.synced.offset = cut
	}
	keep := int((cut-first)/q.upf) + 1
	if (cut-first)%q.upf == 0 && keep > 1 {
		keep-- // the file starting at cut would be empty: drop it
	}
	if _, err := q.removeFiles(keep); err != nil {
		return err
	}
	if uf := q.lastFile(); uf != nil {
		if err := uf.f.Truncate((cut - uf.base) * UnitSize); err != nil {
			return fmt.Errorf("truncate %s: %w", uf.path, err)
		}
		if err := uf.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", uf.path, err)
		}
	}
	q.w.hasLast = false
	if cut > first {
		u, err := q.readUnit(cut - 1)
		if err != nil {
			return err
		}
		q.w.last, q.w.hasLast = u, true
	}
	return nil
}

// deferDirSync records directories to fsync at the next Sync.
func (q *Queue) deferDirSync(dirs ...string) {
	q.dirSync.Lock()
	for _, d := range dirs {
		if !slices.Contains(q.dirSync.dirs, d) {
			q.dirSync.dirs = append(q.dirSync.dirs, d)
		}
	}
	q.dirSync.Unlock()
}

// syncDirs fsyncs the directories deferDirSync recorded.
func (q *Queue) syncDirs() error {
	q.dirSync.Lock()
	defer q.dirSync.Unlock()
	for len(q.dirSync.dirs) > 0 {
		d := q.dirSync.dirs[0]
		if err := q.fs.SyncDir(d); err != nil {
			return fmt.Errorf("consumequeue sync dir %s: %w", d, err)
		}
		q.dirSync.dirs = q.dirSync.dirs[1:]
	}
	return nil
}
