package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

const (
	// chunkSize is how many buffered bytes Append collects before a pwrite.
	chunkSize = 1 << 20
	// maxKeptBuffer caps the write buffer kept between calls.
	maxKeptBuffer = 4 << 20
)

// undoState is the writer state before an Append, for rollback.
type undoState struct {
	pos int64
	seg *segment
}

// Append writes records back to back at the end of the log and returns each
// record's offset. It patches each record's PHYSICALOFFSET field in place
// (the caller's slices are modified) and does not fsync; see Sync.
//
// Append must not be called concurrently with itself. Either all records are
// appended or none: on a write error the log is truncated back to its state
// before the call and the wrapped error is returned; later appends may
// succeed. If that rollback fails too, the log turns failed (ErrFailed).
func (c *CommitLog) Append(records [][]byte) ([]int64, error) {
	if err := c.AppendInPlace(records); err != nil || len(records) == 0 {
		return nil, err
	}
	offsets := make([]int64, len(records))
	for i, r := range records {
		offsets[i] = int64(binary.BigEndian.Uint64(r[physOffsetPos:]))
	}
	return offsets, nil
}

// AppendInPlace is Append without the slice of offsets, for a caller on a
// hot path: each record's offset is in its PHYSICALOFFSET field afterwards.
func (c *CommitLog) AppendInPlace(records [][]byte) error {
	if c.closed.Load() {
		return fmt.Errorf("commitlog append %s: %w", c.dir, ErrClosed)
	}
	if err := c.failure(); err != nil {
		return fmt.Errorf("commitlog append %s: %w: %w", c.dir, ErrFailed, err)
	}
	for i, r := range records {
		if err := checkRecord(r, c.segSize); err != nil {
			return fmt.Errorf("commitlog append %s record %d: %w", c.dir, i, err)
		}
	}
	if len(records) == 0 {
		return nil
	}
	undo := undoState{pos: c.w.pos, seg: c.w.seg}
	if err := c.write(records); err != nil {
		if rerr := c.rollback(undo); rerr != nil {
			c.setFailed(rerr)
			return fmt.Errorf("commitlog append %s at %d: %w (rollback: %w)", c.dir, undo.pos, err, rerr)
		}
		return fmt.Errorf("commitlog append %s at %d: %w", c.dir, undo.pos, err)
	}
	c.maxOffset.Store(c.w.pos)
	return nil
}

// write lays records out from the writer position, rolling over to new
// segments as needed. It updates the writer state only on success.
func (c *CommitLog) write(records [][]byte) error {
	seg, pos := c.w.seg, c.w.pos
	buf := c.w.buf[:0]
	chunkStart := pos
	for _, r := range records {
		n := int64(len(r)) + crcSize
		if end := seg.base + c.segSize; pos+n > end {
			if remaining := end - pos; remaining >= blankSize {
				buf = appendBlank(buf, remaining)
			}
			if err := c.writeChunk(seg, chunkStart, buf); err != nil {
				return err
			}
			next, err := c.rollOver(seg, end)
			if err != nil {
				return err
			}
			seg, pos, chunkStart, buf = next, end, end, buf[:0]
		}
		binary.BigEndian.PutUint64(r[physOffsetPos:], uint64(pos))
		buf = appendEntry(buf, r)
		pos += n
		if len(buf) >= chunkSize {
			if err := c.writeChunk(seg, chunkStart, buf); err != nil {
				return err
			}
			chunkStart, buf = pos, buf[:0]
		}
	}
	if err := c.writeChunk(seg, chunkStart, buf); err != nil {
		return err
	}
	if cap(buf) <= maxKeptBuffer {
		c.w.buf = buf[:0]
	}
	c.w.seg, c.w.pos = seg, pos
	return nil
}

// writeChunk pwrites buf at global offset start inside seg.
func (c *CommitLog) writeChunk(seg *segment, start int64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	n, err := seg.f.WriteAt(buf, start-seg.base)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("write %s at %d: %w", seg.path, start-seg.base, err)
	}
	return nil
}

// rollback restores the state before a failed Append: segments created by it
// are closed and removed, and the previous last segment is truncated back.
func (c *CommitLog) rollback(u undoState) error {
	c.segs.Lock()
	// Segments after u.seg were created by the failed Append (counted from
	// the end: retention may have deleted head segments meanwhile).
	keep := len(c.segs.list)
	for keep > 0 && c.segs.list[keep-1].base > u.seg.base {
		keep--
	}
	created := append([]*segment(nil), c.segs.list[keep:]...)
	c.segs.list = c.segs.list[:keep:keep]
	c.segs.Unlock()
	var errs []error
	for _, s := range created {
		_ = s.f.Close()
		if err := c.fs.Remove(s.path); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.path, err))
		}
	}
	if len(created) > 0 {
		if err := c.fs.SyncDir(c.dir); err != nil {
			// Not fatal: a resurrected empty segment is removed by recovery.
			c.log.Warn().Err(err).Str("dir", c.dir).Msg("commitlog: sync dir after rollback")
		}
	}
	if err := u.seg.f.Truncate(u.pos - u.seg.base); err != nil {
		errs = append(errs, fmt.Errorf("truncate %s to %d: %w", u.seg.path, u.pos-u.seg.base, err))
	}
	c.w.seg, c.w.pos = u.seg, u.pos
	return errors.Join(errs...)
}

// segmentCount returns the number of segments.
func (c *CommitLog) segmentCount() int {
	c.segs.RLock()
	defer c.segs.RUnlock()
	return len(c.segs.list)
}

// Sync fsyncs everything appended so far (the group-commit primitive: call it
// once for many appends) and then advances FlushedOffset. It may run
// concurrently with Append. A failed fsync is sticky: the log turns failed
// and refuses further writes (ErrFailed) until reopened.
func (c *CommitLog) Sync() error {
	if c.closed.Load() {
		return fmt.Errorf("commitlog sync %s: %w", c.dir, ErrClosed)
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if err := c.failure(); err != nil {
		return fmt.Errorf("commitlog sync %s: %w: %w", c.dir, ErrFailed, err)
	}
	target := c.maxOffset.Load()
	from := c.flushed.Load()
	if target <= from {
		return nil
	}
	start := time.Now()
	for _, s := range c.segmentsBetween(from, target) {
		if err := s.f.Sync(); err != nil {
			err = fmt.Errorf("commitlog sync %s: %w", s.path, err)
			c.setFailed(err)
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
	}
	c.flushed.Store(target)
	c.observeSync(time.Since(start))
	return nil
}
