package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// This file holds the replication primitives: ReadRaw on a master, AppendRaw
// and Truncate on a replica. A replica's log is byte-identical to its
// master's: the same entries, the same blank markers, the same segment
// files. The stream therefore carries stored bytes, never records to re-lay.
//
// A raw span always lies inside one segment and consists of whole entries,
// optionally ended by the segment's blank marker. The offset after a span
// that ends a segment (with a blank marker, or with fewer than 8 bytes left,
// where the master wrote nothing) is the next segment's base.

// ErrNotAtEnd is returned by AppendRaw when the offset is not where the log
// ends.
var ErrNotAtEnd = errors.New("commitlog: raw append not at the log end")

// ReadRaw returns the stored bytes of whole entries from offset onwards (up
// to maxBytes, more when the first entry is larger), as they are on disk:
// records with their CRC32C trailers and, at a segment's end, its blank
// marker. It stops at MaxOffset and at the segment end; next is the offset
// the following span starts at (the next segment's base after a blank marker
// or a too-short segment tail). At MaxOffset it returns io.EOF. Only entry
// headers are checked here (the receiver verifies every entry); a header
// that does not parse returns ErrCorrupt. Safe for concurrent use, also with
// Append.
func (c *CommitLog) ReadRaw(offset int64, maxBytes int) (b []byte, next int64, err error) {
	if maxBytes <= 0 {
		maxBytes = DefaultBlockSize
	}
	limit := c.maxOffset.Load()
	if offset == limit {
		return nil, offset, io.EOF
	}
	if offset < 0 || offset > limit {
		return nil, offset, fmt.Errorf("commitlog read raw %s at %d (max %d): %w", c.dir, offset, limit, ErrOutOfRange)
	}
	end := offset - offset%c.segSize + c.segSize
	if end-offset < blankSize {
		return nil, end, nil // nothing stored in a tail this short
	}
	want := min(end, limit) - offset
	buf, err := c.readRaw(offset, min(max(int64(maxBytes), headerSize), want), nil)
	if err != nil {
		return nil, offset, err
	}
	pos := int64(0)
	for int64(len(buf))-pos >= headerSize {
		total := int64(binary.BigEndian.Uint32(buf[pos:]))
		magic := binary.BigEndian.Uint32(buf[pos+4:])
		at := offset + pos
		if magic == magicBlank {
			if total != end-at {
				break
			}
			return buf[: pos+blankSize : pos+blankSize], end, nil
		}
		n := total + crcSize
		if !isRecordMagic(magic) || total < MinRecordSize || n > end-at {
			break
		}
		if int64(len(buf))-pos < n {
			if pos == 0 && n <= want {
				// One entry larger than maxBytes: read it whole.
				buf, err = c.readRaw(offset, n, nil)
				if err != nil {
					return nil, offset, err
				}
				if int64(len(buf)) < n {
					return nil, offset, fmt.Errorf("commitlog read raw %s at %d: %w", c.dir, offset, shortIsCorrupt(io.EOF))
				}
				pos = n
			}
			break
		}
		pos += n
		if at+n == end {
			return buf[:pos:pos], end, nil
		}
	}
	if pos == 0 {
		return nil, offset, fmt.Errorf("commitlog read raw %s at %d: no whole entry: %w", c.dir, offset, ErrCorrupt)
	}
	next = offset + pos
	if end-next < blankSize && next < limit {
		next = end
	}
	return buf[:pos:pos], next, nil
}

// AppendRaw appends b, bytes exactly as a master stored them (see ReadRaw),
// at offset. offset must be MaxOffset, or the next segment's base when fewer
// than 8 bytes are left in the last segment (a master writes nothing there).
// Every entry is verified (sizes, magic, CRC32C, PHYSICALOFFSET) before
// anything is written; a blank marker must end the segment, and the next
// segment file is created right after it, so the log never ends in a blank
// marker. Like Append it does not fsync (see Sync), must not run
// concurrently with Append, AppendRaw or Truncate, and rolls back on a write
// error.
func (c *CommitLog) AppendRaw(offset int64, b []byte) error {
	if c.closed.Load() {
		return fmt.Errorf("commitlog append raw %s: %w", c.dir, ErrClosed)
	}
	if err := c.failure(); err != nil {
		return fmt.Errorf("commitlog append raw %s: %w: %w", c.dir, ErrFailed, err)
	}
	pos := c.w.pos
	segEnd := c.w.seg.base + c.segSize
	roll := false
	switch {
	case offset == pos && pos == segEnd:
		roll = true // the last segment is full; b opens the next one
	case offset == pos:
	case offset == segEnd && segEnd-pos < blankSize:
		roll = true
	default:
		return fmt.Errorf("commitlog append raw %s at %d (max %d): %w", c.dir, offset, pos, ErrNotAtEnd)
	}
	if len(b) == 0 {
		return nil
	}
	if roll {
		segEnd = offset + c.segSize
	}
	blank, err := verifyRaw(b, offset, segEnd)
	if err != nil {
		return fmt.Errorf("commitlog append raw %s at %d: %w", c.dir, offset, err)
	}
	undo := undoState{pos: c.w.pos, seg: c.w.seg}
	if err := c.writeRaw(offset, b, roll, blank); err != nil {
		if rerr := c.rollback(undo); rerr != nil {
			c.setFailed(rerr)
			return fmt.Errorf("commitlog append raw %s at %d: %w (rollback: %w)", c.dir, offset, err, rerr)
		}
		return fmt.Errorf("commitlog append raw %s at %d: %w", c.dir, offset, err)
	}
	c.maxOffset.Store(c.w.pos)
	return nil
}

// writeRaw does AppendRaw's writes and moves the writer state on success.
func (c *CommitLog) writeRaw(offset int64, b []byte, roll, blank bool) error {
	seg := c.w.seg
	if roll {
		next, err := c.rollOver(seg, offset)
		if err != nil {
			return err
		}
		seg = next
	}
	if err := c.writeChunk(seg, offset, b); err != nil {
		return err
	}
	pos := offset + int64(len(b))
	if blank {
		end := seg.base + c.segSize
		next, err := c.rollOver(seg, end)
		if err != nil {
			return err
		}
		seg, pos = next, end
	}
	c.w.seg, c.w.pos = seg, pos
	return nil
}

// verifyRaw checks that b holds whole, valid entries stored from offset on,
// inside the segment ending at segEnd, with a blank marker only as the very
// last thing and only if it reaches segEnd. It reports whether b ends with a
// blank marker.
func verifyRaw(b []byte, offset, segEnd int64) (blank bool, err error) {
	if offset+int64(len(b)) > segEnd {
		return false, fmt.Errorf("%d bytes cross the segment end %d: %w", len(b), segEnd, ErrCorrupt)
	}
	pos := int64(0)
	for pos < int64(len(b)) {
		at := offset + pos
		if int64(len(b))-pos < headerSize {
			return false, fmt.Errorf("at %d: %d bytes, no entry: %w", at, int64(len(b))-pos, ErrCorrupt)
		}
		total := int64(binary.BigEndian.Uint32(b[pos:]))
		magic := binary.BigEndian.Uint32(b[pos+4:])
		if magic == magicBlank {
			if total != segEnd-at || pos+blankSize != int64(len(b)) {
				return false, fmt.Errorf("at %d: blank marker size %d not at the segment end: %w", at, total, ErrCorrupt)
			}
			return true, nil
		}
		n := total + crcSize
		if !isRecordMagic(magic) || total < MinRecordSize || n > int64(len(b))-pos {
			return false, fmt.Errorf("at %d: header size %d magic %#08x: %w", at, total, magic, ErrCorrupt)
		}
		if reason := verifyEntry(b[pos:pos+n], at); reason != "" {
			return false, fmt.Errorf("at %d: %s: %w", at, reason, ErrCorrupt)
		}
		pos += n
	}
	return false, nil
}

// Truncate cuts the log back to offset, an entry boundary in [MinOffset,
// MaxOffset]: the segment holding it is cut there and fsynced, later
// segments are deleted (and the directory fsynced), MaxOffset becomes offset
// and FlushedOffset at most offset. A replica calls it at its consistent
// point, a promoted master at its last whole record. It is a writer
// operation (not concurrent with Append, AppendRaw or itself); readers past
// the cut may fail with ErrOutOfRange or ErrCorrupt, so the owner stops
// reading there first (the consume queues above the cut are cut too).
// A crash during Truncate leaves a log that recovers to offset or to a
// longer valid prefix of the old log, never to torn state.
func (c *CommitLog) Truncate(offset int64) error {
	if c.closed.Load() {
		return fmt.Errorf("commitlog truncate %s: %w", c.dir, ErrClosed)
	}
	if err := c.failure(); err != nil {
		return fmt.Errorf("commitlog truncate %s: %w: %w", c.dir, ErrFailed, err)
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if offset < c.MinOffset() || offset > c.w.pos {
		return fmt.Errorf("commitlog truncate %s to %d (min %d, max %d): %w",
			c.dir, offset, c.MinOffset(), c.w.pos, ErrOutOfRange)
	}
	if offset == c.w.pos {
		return nil
	}
	// Publish the lower end first, so new readers stop at the cut.
	c.maxOffset.Store(offset)
	if c.flushed.Load() > offset {
		c.flushed.Store(offset)
	}
	c.segs.Lock()
	list := c.segs.list
	i := min(int((offset-list[0].base)/c.segSize), len(list)-1)
	keep := list[i]
	gone := append([]*segment(nil), list[i+1:]...)
	c.segs.list = list[: i+1 : i+1]
	c.segs.Unlock()
	// Later segments go first, the newest first, so that a crash part-way
	// leaves a contiguous prefix of the old log (recovery then cuts a blank
	// marker left at its end); only then is the kept segment cut.
	var errs []error
	for j := len(gone) - 1; j >= 0; j-- {
		s := gone[j]
		_ = s.f.Close()
		if err := c.fs.Remove(s.path); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.path, err))
		}
	}
	if len(gone) > 0 {
		if err := c.fs.SyncDir(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("sync dir: %w", err))
		}
	}
	// Cut the kept segment under the write lock: no pread runs meanwhile.
	c.segs.Lock()
	if err := keep.f.Truncate(offset - keep.base); err != nil {
		errs = append(errs, fmt.Errorf("cut %s to %d: %w", keep.path, offset-keep.base, err))
	}
	c.segs.Unlock()
	if err := keep.f.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("sync %s: %w", keep.path, err))
	}
	c.w.seg, c.w.pos = keep, offset
	if err := errors.Join(errs...); err != nil {
		err = fmt.Errorf("commitlog truncate %s to %d: %w", c.dir, offset, err)
		c.setFailed(err)
		return err
	}
	c.log.Info().Str("dir", c.dir).Int64("offset", offset).Int("deleted_segments", len(gone)).
		Msg("commitlog: truncated")
	return nil
}
