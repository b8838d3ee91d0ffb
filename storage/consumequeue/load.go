package consumequeue

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// openQueue loads the queue stored in dir, repairing its tail.
func openQueue(dir string, id QueueID, upf int64, fs vfs.FS, log zerolog.Logger) (*Queue, error) {
	q := &Queue{id: id, dir: dir, upf: upf, fs: fs, log: log}
	if err := q.openFiles(); err != nil {
		_ = q.close(false)
		return nil, err
	}
	if err := q.recover(); err != nil {
		_ = q.close(false)
		return nil, err
	}
	q.files.Lock()
	q.publishFirstLocked()
	q.files.Unlock()
	return q, nil
}

// openFiles lists and opens the queue's unit files.
func (q *Queue) openFiles() error {
	entries, err := q.fs.ReadDir(q.dir)
	if err != nil {
		return fmt.Errorf("consumequeue open %s: %w", q.dir, err)
	}
	var bases []int64
	for _, e := range entries {
		base, ok := parseFileName(e.Name())
		if !ok || !e.Type().IsRegular() {
			q.log.Warn().Str("dir", q.dir).Str("file", e.Name()).Msg("consumequeue: ignoring unknown file")
			continue
		}
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for i, base := range bases {
		if base%q.upf != 0 || (i > 0 && base != bases[i-1]+q.upf) {
			return fmt.Errorf("consumequeue open %s: file %s with %d units per file: %w",
				q.dir, fileName(base), q.upf, ErrLayout)
		}
		path := filepath.Join(q.dir, fileName(base))
		f, err := q.fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("consumequeue open %s: %w", path, err)
		}
		q.files.list = append(q.files.list, &unitFile{base: base, path: path, f: f})
	}
	return nil
}

// recover finds the last trustworthy unit, cuts what follows it and sets
// the writer state.
func (q *Queue) recover() error {
	list := q.files.list
	if len(list) == 0 {
		return nil
	}
	full := q.upf * UnitSize
	last := len(list) - 1
	for i := 0; i < last; i++ {
		size, err := list[i].f.Size()
		if err != nil {
			return fmt.Errorf("consumequeue open %s: %w", list[i].path, err)
		}
		if size != full {
			last = i
			break
		}
	}
	var removed int64
	if last < len(list)-1 {
		n, err := q.removeFiles(last + 1)
		if err != nil {
			return err
		}
		removed = n
	}
	tail := q.files.list[last]
	var prev Unit
	hasPrev := false
	if last > 0 {
		u, err := q.readAt(q.files.list[last-1], q.upf-1)
		if err != nil {
			return err
		}
		prev, hasPrev = u, true
	}
	size, err := tail.f.Size()
	if err != nil {
		return fmt.Errorf("consumequeue open %s: %w", tail.path, err)
	}
	valid, lastUnit, reason, err := scanUnits(tail, size, q.upf, prev, hasPrev)
	if err != nil {
		return err
	}
	if valid*UnitSize < size {
		if err := tail.f.Truncate(valid * UnitSize); err != nil {
			return fmt.Errorf("consumequeue open truncate %s: %w", tail.path, err)
		}
		if err := tail.f.Sync(); err != nil {
			return fmt.Errorf("consumequeue open sync %s: %w", tail.path, err)
		}
	}
	if valid*UnitSize < size || removed > 0 {
		q.cutAtOpen = size - valid*UnitSize + removed
		q.log.Warn().Str("queue", q.id.String()).Str("file", tail.path).Int64("kept_units", valid).
			Int64("truncated_bytes", size-valid*UnitSize+removed).Int("deleted_files", len(list)-1-last).
			Str("reason", reason).Msg("consumequeue: cut torn tail")
	}
	if valid > 0 {
		q.w.last, q.w.hasLast = lastUnit, true
	} else {
		q.w.last, q.w.hasLast = prev, hasPrev
	}
	q.maxOffset.Store(tail.base + valid)
	q.synced.offset = tail.base + valid
	return nil
}

// scanUnits checks the units of a file of the given size and returns how
// many leading units are sane, the last of them, and why scanning stopped
// early ("" if it did not).
func scanUnits(uf *unitFile, size, upf int64, prev Unit, hasPrev bool) (int64, Unit, string, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(uf.f, 0, size), 64<<10)
	var b [UnitSize]byte
	var n int64
	for ; n < size/UnitSize; n++ {
		if n == upf {
			return n, prev, "units past the file end", nil
		}
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, Unit{}, "", fmt.Errorf("consumequeue open read %s: %w", uf.path, err)
		}
		u := decodeUnit(b[:])
		if reason := checkUnit(u, prev, hasPrev); reason != "" {
			return n, prev, fmt.Sprintf("unit %d: %s", uf.base+n, reason), nil
		}
		prev, hasPrev = u, true
	}
	if size%UnitSize != 0 {
		return n, prev, "partial unit", nil
	}
	return n, prev, "", nil
}

// readAt reads the unit at index i of a file.
func (q *Queue) readAt(uf *unitFile, i int64) (Unit, error) {
	var b [UnitSize]byte
	if _, err := uf.f.ReadAt(b[:], i*UnitSize); err != nil {
		return Unit{}, fmt.Errorf("consumequeue read %s unit %d: %w", uf.path, i, err)
	}
	return decodeUnit(b[:]), nil
}

// removeFiles closes and deletes files list[keep:], fsyncs the directory and
// returns the bytes removed.
func (q *Queue) removeFiles(keep int) (int64, error) {
	q.files.Lock()
	gone := append([]*unitFile(nil), q.files.list[keep:]...)
	q.files.list = q.files.list[:keep:keep]
	q.publishFirstLocked()
	q.files.Unlock()
	var removed int64
	var errs []error
	for _, uf := range gone {
		if size, err := uf.f.Size(); err == nil {
			removed += size
		}
		_ = uf.f.Close()
		if err := q.fs.Remove(uf.path); err != nil {
			errs = append(errs, fmt.Errorf("consumequeue remove %s: %w", uf.path, err))
		}
	}
	if len(gone) > 0 {
		if err := q.fs.SyncDir(q.dir); err != nil {
			errs = append(errs, fmt.Errorf("consumequeue sync dir %s: %w", q.dir, err))
		}
	}
	return removed, errors.Join(errs...)
}
