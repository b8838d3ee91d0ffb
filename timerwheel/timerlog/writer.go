package timerlog

import (
	"fmt"
	"os"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// The writer: entries go to the tail segment with positional writes at
// tailCount*EntrySize, through Options.FS. It writes tidwall/wal's binary
// segment format and cycles segments where wal does (segmentMirror), so
// that a directory written by either opens with the other; the tests check
// this against wal itself.

// File modes of what the log creates (tidwall/wal's defaults).
const (
	dirPerm  os.FileMode = 0o750
	filePerm os.FileMode = 0o640
)

// segFile is an open segment file shared by the writer and SyncTo: it is
// closed when the last of them lets go, so that a cycle never closes a
// handle an fsync is running on. refs is guarded by Log.mu.
type segFile struct {
	f    vfs.File
	path string
	refs int
}

// release drops one reference and closes the file with the last one.
// l.mu must be held.
func (sf *segFile) release() error {
	sf.refs--
	if sf.refs > 0 {
		return nil
	}
	if err := sf.f.Close(); err != nil {
		return fmt.Errorf("timerlog close %s: %w", sf.path, err)
	}
	return nil
}

// openTail opens the tail segment for writing. l.mu must be held (or the
// log not yet shared).
func (l *Log) openTail(seg segment, flag int) error {
	f, err := l.fs.OpenFile(seg.path, flag, filePerm)
	if err != nil {
		return fmt.Errorf("timerlog open %s: %w", seg.path, err)
	}
	l.tail = &segFile{f: f, path: seg.path, refs: 1}
	return nil
}

// write writes the n entries in buf (EntrySize bytes each, the first with
// sequence Last()+1) to the log, starting new segments where wal would. It
// stops at the first error; the mirror then covers what was written. l.mu
// must be held.
func (l *Log) write(buf []byte, n int) error {
	m := &l.mirror
	if m.overfull() {
		if err := l.cycle(); err != nil {
			return err
		}
	}
	start := 0 // first entry of buf not yet written
	for i := 0; i < n; i++ {
		if (m.tailCount+uint64(i-start)+1)*EntrySize < uint64(m.segSize) {
			continue
		}
		// Entry i fills the tail: write up to it and start the next one.
		if err := l.writeTail(buf[start*EntrySize : (i+1)*EntrySize]); err != nil {
			return err
		}
		if err := l.cycle(); err != nil {
			return err
		}
		start = i + 1
	}
	if start < n {
		return l.writeTail(buf[start*EntrySize : n*EntrySize])
	}
	return nil
}

// writeTail writes whole entries at the end of the tail segment.
// l.mu must be held.
func (l *Log) writeTail(b []byte) error {
	off := int64(l.mirror.tailCount * EntrySize)
	if _, err := l.tail.f.WriteAt(b, off); err != nil {
		return fmt.Errorf("timerlog write %s@%d: %w", l.tail.path, off, err)
	}
	l.mirror.tailCount += uint64(len(b) / EntrySize)
	return nil
}

// cycle ends the tail segment and creates the next one. The old tail is
// fsynced first (as tidwall/wal does; skipped under NoSync), so that only
// the newest segment can ever hold unsynced entries: a crash leaves a log
// whose torn part is its tail, which is all repairTail looks at. The new
// file's directory entry is made durable by the next SyncTo (mirror.created)
// before it reports any of its entries durable. l.mu must be held.
func (l *Log) cycle() error {
	if !l.opts.NoSync {
		if err := l.tail.f.Sync(); err != nil {
			return fmt.Errorf("timerlog sync %s: %w", l.tail.path, err)
		}
	}
	if err := l.tail.release(); err != nil {
		l.tail = nil
		return err
	}
	l.tail = nil
	seg := l.mirror.cycle()
	if err := l.openTail(seg, os.O_CREATE|os.O_RDWR|os.O_TRUNC); err != nil {
		// The mirror lists a segment that may not exist: the log is failed
		// (the caller sets the sticky error) and reopening lists the
		// directory again.
		return err
	}
	return nil
}
