package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// segment is one open segment file.
type segment struct {
	base int64  // global offset of the file's first byte
	path string // full path
	f    vfs.File
}

// CommitLog is a segmented append-only log of stored-message records. See the
// package documentation for the format and the concurrency rules.
type CommitLog struct {
	dir     string
	segSize int64
	fs      vfs.FS
	log     zerolog.Logger

	// segs guards the segment list. The writer mutates it (new segments,
	// rollback) under the write lock; readers look segments up under the read
	// lock and then pread without holding it.
	segs struct {
		sync.RWMutex
		list []*segment // contiguous, ascending, list[i].base = list[0].base + i*segSize
	}

	maxOffset atomic.Int64 // next write offset, published after the bytes are written
	minOffset atomic.Int64 // the first segment's base, published when the segment list's head changes
	flushed   atomic.Int64 // everything below is fsynced
	closed    atomic.Bool

	// w is owned by the single writer (Append).
	w struct {
		pos int64    // next write offset (== maxOffset between calls)
		seg *segment // last segment, the one pos falls in or ends
		buf []byte   // reusable write buffer
	}

	// syncMu serializes Sync calls.
	syncMu sync.Mutex

	// fail holds the sticky error after a failed fsync or rollback.
	fail struct {
		sync.Mutex
		err error
	}

	recovery RecoveryInfo

	// syncObserver receives the duration of each Sync that fsynced data
	// (see SetSyncObserver).
	syncObserver atomic.Pointer[func(time.Duration)]
}

// Open opens (creating if needed) the commit log in dir and recovers its tail.
func Open(dir string, opts Options) (*CommitLog, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("commitlog open %s: %w", dir, err)
	}
	c := &CommitLog{dir: dir, segSize: opts.SegmentSize, fs: opts.FS, log: opts.Logger}
	if err := vfs.MkdirAllSynced(c.fs, dir, 0o755); err != nil {
		return nil, fmt.Errorf("commitlog open %s: %w", dir, err)
	}
	if err := c.openSegments(); err != nil {
		c.closeFiles()
		return nil, err
	}
	if len(c.segs.list) == 0 {
		s, err := c.createSegment(0)
		if err != nil {
			return nil, fmt.Errorf("commitlog open %s: %w", dir, err)
		}
		c.segs.list = append(c.segs.list, s)
	}
	if err := c.recover(opts.RecoverFrom); err != nil {
		c.closeFiles()
		return nil, err
	}
	c.minOffset.Store(c.segs.list[0].base)
	return c, nil
}

// openSegments lists and opens the existing segment files.
func (c *CommitLog) openSegments() error {
	entries, err := c.fs.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("commitlog open %s: %w", c.dir, err)
	}
	var bases []int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // subdirectories and the like are not ours
		}
		name := e.Name()
		base, ok := parseSegmentName(name)
		if !ok {
			c.log.Warn().Str("dir", c.dir).Str("file", name).Msg("commitlog: ignoring unknown file")
			continue
		}
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for i, base := range bases {
		if base%c.segSize != 0 || (i > 0 && base != bases[i-1]+c.segSize) {
			return fmt.Errorf("commitlog open %s: segment %s with segment size %d: %w",
				c.dir, segmentName(base), c.segSize, ErrLayout)
		}
		path := filepath.Join(c.dir, segmentName(base))
		f, err := c.fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("commitlog open %s: %w", path, err)
		}
		c.segs.list = append(c.segs.list, &segment{base: base, path: path, f: f})
	}
	return nil
}

// createSegment creates the segment file starting at base and fsyncs the
// directory. It does not add it to the list.
func (c *CommitLog) createSegment(base int64) (*segment, error) {
	path := filepath.Join(c.dir, segmentName(base))
	f, err := c.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("commitlog create %s: %w", path, err)
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		_ = f.Close()
		_ = c.fs.Remove(path)
		return nil, fmt.Errorf("commitlog create %s: sync dir: %w", path, err)
	}
	return &segment{base: base, path: path, f: f}, nil
}

// rollOver seals full (fsyncs it, so that only the last segment can lose
// unsynced bytes to a power cut: recovery scans just that one) and then
// creates and lists the segment starting at base. A failed fsync turns the
// log failed, as in Sync.
func (c *CommitLog) rollOver(full *segment, base int64) (*segment, error) {
	if err := full.f.Sync(); err != nil {
		err = fmt.Errorf("commitlog seal %s: %w", full.path, err)
		c.setFailed(err)
		return nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	next, err := c.createSegment(base)
	if err != nil {
		return nil, err
	}
	c.segs.Lock()
	c.segs.list = append(c.segs.list, next)
	c.segs.Unlock()
	return next, nil
}

// Recovery reports what Open found and cut.
func (c *CommitLog) Recovery() RecoveryInfo { return c.recovery }

// Dir returns the directory holding the segment files.
func (c *CommitLog) Dir() string { return c.dir }

// SegmentSize returns the logical size of each segment file.
func (c *CommitLog) SegmentSize() int64 { return c.segSize }

// MaxOffset returns the next write offset: every record below it is readable.
// Safe from any goroutine.
func (c *CommitLog) MaxOffset() int64 { return c.maxOffset.Load() }

// FlushedOffset returns the offset below which everything is fsynced. Safe
// from any goroutine.
func (c *CommitLog) FlushedOffset() int64 { return c.flushed.Load() }

// MinOffset returns the global offset of the first byte still stored (the
// first segment's base). Safe from any goroutine.
//
// It reads an atomic, never the segment lock: an event loop may call it,
// and a reader holds that lock across a disk read.
func (c *CommitLog) MinOffset() int64 { return c.minOffset.Load() }

// pin returns the segment holding global offset off with the segment set
// read-locked, so that neither Reopen nor Close can close its file while
// the caller reads it. On success the caller preads and then calls unpin;
// it must not take c.segs again in between (a waiting writer would
// deadlock it). On error nothing is held.
func (c *CommitLog) pin(off int64) (*segment, error) {
	c.segs.RLock()
	if c.closed.Load() {
		c.segs.RUnlock()
		return nil, ErrClosed
	}
	if len(c.segs.list) == 0 || off < c.segs.list[0].base {
		c.segs.RUnlock()
		return nil, ErrOutOfRange
	}
	i := (off - c.segs.list[0].base) / c.segSize
	if i >= int64(len(c.segs.list)) {
		c.segs.RUnlock()
		return nil, ErrOutOfRange
	}
	return c.segs.list[i], nil
}

// unpin releases what pin took.
func (c *CommitLog) unpin() { c.segs.RUnlock() }

// segmentsBetween returns the segments holding bytes in [from, to).
func (c *CommitLog) segmentsBetween(from, to int64) []*segment {
	c.segs.RLock()
	defer c.segs.RUnlock()
	var out []*segment
	for _, s := range c.segs.list {
		if s.base < to && s.base+c.segSize > from {
			out = append(out, s)
		}
	}
	return out
}

// failure returns the sticky error, if any.
func (c *CommitLog) failure() error {
	c.fail.Lock()
	defer c.fail.Unlock()
	return c.fail.err
}

// setFailed records the first sticky error.
func (c *CommitLog) setFailed(err error) {
	c.fail.Lock()
	defer c.fail.Unlock()
	if c.fail.err == nil {
		c.fail.err = err
		c.log.Error().Err(err).Str("dir", c.dir).Msg("commitlog: failed, refusing writes until reopened")
	}
}

// Close fsyncs (unless the log has failed) and closes every segment file.
// Calls after the first return ErrClosed. Readers still running get
// ErrClosed; none reads a closed file (see pin).
func (c *CommitLog) Close() error {
	if c.closed.Load() {
		return ErrClosed
	}
	var errs []error
	if c.failure() == nil {
		if err := c.Sync(); err != nil {
			errs = append(errs, err)
		}
	}
	c.segs.Lock()
	c.closed.Store(true)
	c.segs.Unlock()
	if err := c.closeFiles(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commitlog close %s: %w", c.dir, err)
	}
	return nil
}

// closeFiles closes every open segment file and empties the list.
func (c *CommitLog) closeFiles() error {
	c.segs.Lock()
	defer c.segs.Unlock()
	err := closeSegments(c.segs.list)
	c.segs.list = nil
	return err
}

// closeSegments closes the files of list.
func closeSegments(list []*segment) error {
	var errs []error
	for _, s := range list {
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.path, err))
		}
	}
	return errors.Join(errs...)
}
