package index

import (
	"errors"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Hit is one indexed occurrence of a key.
type Hit struct {
	// Offset is the CommitLog offset of the record.
	Offset int64
	// StoreTimestamp is the record's store time (ms).
	StoreTimestamp int64
}

// Stats summarizes the index.
type Stats struct {
	Files   int
	Entries int64
}

// pendingEntry is an entry added but not yet flushed.
type pendingEntry struct {
	hash       uint64
	offset, ts int64
}

// Index is an open index directory. It is not safe for concurrent use: one
// owner (the index stage) adds, flushes and looks up.
type Index struct {
	dir     string
	opts    Options
	fs      vfs.FS
	files   []*file // ascending sequence; the last one is active
	pending []pendingEntry
	buf     []byte
	// lastAdded is the offset of the newest entry added (for ordering).
	lastAdded int64
	// flushed is the position given to the last Flush; durable the one
	// whose header is fsynced.
	flushed, durable int64
	failed           error
	closed           bool
}

// Open opens (creating if needed) the index in dir and recovers it: every
// file's newest valid header is read, a file without one is dropped with
// everything after it, a file that was being sealed is sealed again, the
// active file is scanned (a torn or corrupt tail is cut), and entries at or
// above the durable position are removed, so that re-indexing from
// Position() adds each record exactly once.
func Open(dir string, opts Options) (*Index, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ix := &Index{dir: dir, opts: opts, fs: opts.FS}
	if err := vfs.MkdirAllSynced(ix.fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("index open %s: %w", dir, err)
	}
	if err := ix.load(); err != nil {
		ix.closeFiles()
		return nil, err
	}
	return ix, nil
}

// ensureActive creates a new active file when there is none or the last
// one is sealed.
func (ix *Index) ensureActive() error {
	var seq uint64 = 1
	if n := len(ix.files); n > 0 {
		last := ix.files[n-1]
		if last.slots != nil && !last.full() {
			return nil
		}
		if last.slots != nil {
			if err := last.seal(); err != nil {
				return err
			}
		}
		seq = last.seq + 1
	}
	fl, err := createFile(ix.fs, ix.dir, seq, uint32(ix.opts.Slots), uint32(ix.opts.MaxEntries), ix.durable)
	if err != nil {
		return err
	}
	ix.files = append(ix.files, fl)
	return nil
}

func (ix *Index) active() *file { return ix.files[len(ix.files)-1] }

// Position is the durable position: the CommitLog offset below which every
// record's keys are in the index and fsynced. After Open, indexing resumes
// here.
func (ix *Index) Position() int64 { return ix.durable }

// FlushedPosition is the position given to the last Flush (not necessarily
// durable yet).
func (ix *Index) FlushedPosition() int64 { return ix.flushed }

// Add queues one key of the record at CommitLog offset offset, stored at
// storeTimestamp (ms). Records must be added in CommitLog order (several
// keys of one record share its offset). Empty keys are ignored. Nothing is
// written before Flush.
func (ix *Index) Add(topic, key string, offset, storeTimestamp int64) error {
	if key == "" {
		return nil
	}
	return ix.AddHash(KeyHash(topic, key), offset, storeTimestamp)
}

// AddHash is Add for a key already hashed with KeyHash.
func (ix *Index) AddHash(hash uint64, offset, storeTimestamp int64) error {
	if offset < ix.lastAdded {
		return fmt.Errorf("index add at %d after %d: %w", offset, ix.lastAdded, ErrOutOfOrder)
	}
	ix.lastAdded = offset
	ix.pending = append(ix.pending, pendingEntry{hash: hash, offset: offset, ts: storeTimestamp})
	return nil
}

// Flush writes the queued entries (one write per file; a full file is
// sealed and a new one started) and records position, the CommitLog offset
// below which every record has been added. Entries become visible to
// Lookup; Sync makes them and the position durable.
func (ix *Index) Flush(position int64) error {
	if err := ix.usable(); err != nil {
		return err
	}
	fl := ix.active()
	first := fl.count + 1
	buf := ix.buf[:0]
	for _, p := range ix.pending {
		if fl.full() {
			if err := ix.write(fl, first, buf); err != nil {
				return err
			}
			buf = buf[:0]
			if err := ix.roll(p.offset); err != nil {
				return err
			}
			fl = ix.active()
			first = fl.count + 1
		}
		e := entry{hash: p.hash, offset: p.offset, ts: p.ts, prev: fl.slots[p.hash%uint64(fl.h.slots)]}
		n := len(buf)
		buf = append(buf, zeroEntry[:]...) // encoded in place: a local array would escape (crc32)
		e.encode(buf[n:])
		fl.note(e, fl.count+1)
	}
	if err := ix.write(fl, first, buf); err != nil {
		return err
	}
	ix.buf = buf[:0]
	ix.pending = ix.pending[:0]
	ix.flushed = max(ix.flushed, position)
	return nil
}

// zeroEntry is the room one entry takes in Flush's buffer.
var zeroEntry [entrySize]byte

// write writes encoded entries starting at entry number first.
func (ix *Index) write(fl *file, first uint32, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	if _, err := fl.f.WriteAt(buf, entryPos(fl.h.slots, first)); err != nil {
		return ix.fail(fmt.Errorf("index write %s: %w", fl.path, err))
	}
	return nil
}

// roll seals the full active file and starts the next one. next is the
// offset of the first entry that did not fit: every record below it has all
// its entries in the sealed (durable) files, so it becomes the durable
// position recorded in both files' headers.
func (ix *Index) roll(next int64) error {
	fl := ix.active()
	pos := max(ix.durable, next)
	fl.h.position = pos
	if err := fl.seal(); err != nil {
		return ix.fail(err)
	}
	ix.durable, ix.flushed = pos, max(ix.flushed, pos)
	if err := ix.ensureActive(); err != nil {
		return ix.fail(err)
	}
	return nil
}

// Sync makes the flushed entries and position durable: the active file is
// fsynced, then its header records the position and is fsynced in turn.
func (ix *Index) Sync() error {
	if err := ix.usable(); err != nil {
		return err
	}
	if ix.flushed == ix.durable {
		return nil
	}
	return ix.commit()
}

// commit fsyncs the active file and records ix.flushed in its header.
func (ix *Index) commit() error {
	fl := ix.active()
	if err := fl.f.Sync(); err != nil {
		return ix.fail(fmt.Errorf("index sync %s: %w", fl.path, err))
	}
	fl.h.position = ix.flushed
	if err := fl.writeHeader(); err != nil {
		return ix.fail(err)
	}
	if err := fl.f.Sync(); err != nil {
		return ix.fail(fmt.Errorf("index sync %s: %w", fl.path, err))
	}
	ix.durable = ix.flushed
	return nil
}

// TruncateFrom removes every entry at or above the CommitLog offset pos
// (for example after the CommitLog lost its tail), drops what was added but
// not flushed, and makes the result durable. Position() is then at most
// pos: re-index from there.
func (ix *Index) TruncateFrom(pos int64) error {
	if err := ix.usable(); err != nil {
		return err
	}
	ix.pending = ix.pending[:0]
	if err := ix.cut(pos); err != nil {
		return ix.fail(err)
	}
	if err := ix.ensureActive(); err != nil {
		return ix.fail(err)
	}
	ix.lastAdded = 0
	if fl := ix.active(); fl.count > 0 {
		ix.lastAdded = fl.lastOffset
	} else if n := len(ix.files); n > 1 {
		ix.lastAdded = ix.files[n-2].lastOffset
	}
	ix.flushed = min(ix.flushed, pos)
	if ix.durable == ix.flushed {
		return nil
	}
	return ix.commit()
}

// RemoveBefore deletes the sealed files whose entries all point below the
// CommitLog offset off (records retention removed) and returns how many it
// deleted. The active file is never deleted.
func (ix *Index) RemoveBefore(off int64) (int, error) {
	if err := ix.usable(); err != nil {
		return 0, err
	}
	n := 0
	for len(ix.files) > 1 && ix.files[0].slots == nil && ix.files[0].lastOffset < off {
		if err := ix.fs.Remove(ix.files[0].path); err != nil {
			return n, fmt.Errorf("index remove %s: %w", ix.files[0].path, err)
		}
		ix.files = ix.files[1:]
		n++
	}
	if n > 0 {
		if err := ix.fs.SyncDir(ix.dir); err != nil {
			return n, fmt.Errorf("index remove: %w", err)
		}
	}
	return n, nil
}

// Close syncs (unless the index failed) and closes the index.
func (ix *Index) Close() error {
	if ix.closed {
		return nil
	}
	var err error
	if ix.failed == nil && len(ix.files) > 0 {
		err = ix.Sync()
	}
	ix.closed = true
	return errors.Join(err, ix.closeFiles())
}

func (ix *Index) closeFiles() error {
	var errs []error
	for _, fl := range ix.files {
		if fl.f != nil {
			errs = append(errs, fl.f.Close())
			fl.f = nil
		}
	}
	return errors.Join(errs...)
}

func (ix *Index) usable() error {
	if ix.closed {
		return ErrClosed
	}
	if ix.failed != nil {
		return fmt.Errorf("%w: %v", ErrFailed, ix.failed)
	}
	return nil
}

// fail makes err sticky: the in-memory state may no longer match the files.
func (ix *Index) fail(err error) error {
	ix.failed = err
	return fmt.Errorf("%w: %v", ErrFailed, err)
}
