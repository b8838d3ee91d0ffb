package commitlog

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Retention: whole segments are deleted from the head of the log, oldest
// first, by the retention stage (actors/retention). Deleting only ever
// removes a prefix of the segment list, so the files left on disk stay
// contiguous whatever moment a crash interrupts a deletion, and Open needs
// no special case for it. The segment being written is never deleted.

// SegmentInfo describes one segment file.
type SegmentInfo struct {
	// Base is the global offset of the segment's first byte.
	Base int64
	// End is Base + SegmentSize: the first offset of the next segment.
	End int64
	// Path is the segment file.
	Path string
	// Size is the file's size in bytes (set by DeleteOldest only).
	Size int64
}

// ModTime returns the segment file's modification time.
func (i SegmentInfo) ModTime() (time.Time, error) {
	st, err := os.Stat(i.Path)
	if err != nil {
		return time.Time{}, fmt.Errorf("commitlog stat %s: %w", i.Path, err)
	}
	return st.ModTime(), nil
}

// Segments lists the segments, oldest first, without touching the files.
// Safe from any goroutine.
func (c *CommitLog) Segments() []SegmentInfo {
	c.segs.RLock()
	defer c.segs.RUnlock()
	out := make([]SegmentInfo, len(c.segs.list))
	for i, s := range c.segs.list {
		out[i] = SegmentInfo{Base: s.base, End: s.base + c.segSize, Path: s.path}
	}
	return out
}

// DeleteOldest deletes the oldest segment if it lies wholly below limit
// (its End <= limit) and is not the segment being written: it is not the
// last segment and MaxOffset lies beyond its end. It reports the segment
// and whether it was deleted. The segment leaves the list under the write
// lock, so no reader is reading it (readers pread under the read lock, see
// pin) and MinOffset moves to the next segment before the file goes; then
// the file is closed and unlinked (the directory is not fsynced: see
// below). Safe to call concurrently with Append, Sync, Reopen and readers;
// calls must not overlap each other.
func (c *CommitLog) DeleteOldest(limit int64) (SegmentInfo, bool, error) {
	if c.closed.Load() {
		return SegmentInfo{}, false, fmt.Errorf("commitlog delete %s: %w", c.dir, ErrClosed)
	}
	c.syncMu.Lock() // not while Sync fsyncs the segments or Reopen swaps them
	defer c.syncMu.Unlock()
	c.segs.Lock()
	if len(c.segs.list) < 2 || c.closed.Load() {
		c.segs.Unlock()
		return SegmentInfo{}, false, nil
	}
	s := c.segs.list[0]
	end := s.base + c.segSize
	// end < MaxOffset (not <=): while an Append is in flight MaxOffset is
	// still its start, so a segment it may roll back into is never taken.
	if end > limit || end >= c.maxOffset.Load() {
		c.segs.Unlock()
		return SegmentInfo{}, false, nil
	}
	c.segs.list = c.segs.list[1:]
	c.minOffset.Store(c.segs.list[0].base)
	c.segs.Unlock()

	info := SegmentInfo{Base: s.base, End: end, Path: s.path}
	if n, err := s.f.Size(); err == nil {
		info.Size = n
	}
	_ = s.f.Close()
	// No directory fsync: a deletion lost to a power failure brings back a
	// head segment, which leaves the log contiguous and changes nothing
	// else (the consume queues' minimums are recomputed on open). Skipping
	// it keeps deletions from adding journal commits under the writer's
	// own fsyncs.
	if err := c.fs.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return info, true, fmt.Errorf("commitlog delete %s: %w", s.path, err)
	}
	c.log.Info().Str("file", s.path).Int64("base", s.base).Int64("bytes", info.Size).
		Int64("min_offset", end).Msg("commitlog: segment deleted")
	return info, true, nil
}
