package commitlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// RecoveryInfo describes what Open verified and what it cut.
type RecoveryInfo struct {
	// ScannedFrom is the global offset where verification started.
	ScannedFrom int64
	// ScannedBytes is the number of bytes verified (entries and markers).
	ScannedBytes int64
	// Records is the number of records verified.
	Records int
	// TruncatedAt is the global offset where the log was cut, or -1 if
	// nothing was cut.
	TruncatedAt int64
	// TruncatedBytes counts the bytes removed, including deleted segments.
	TruncatedBytes int64
	// DeletedSegments counts segment files removed after the cut.
	DeletedSegments int
	// Reason says why the log was cut ("" if it was not).
	Reason string
}

// scanResult is the outcome of verifying one segment file.
type scanResult struct {
	end      int64  // local end of the verified data
	complete bool   // segment properly finished; the next segment may follow
	blankAt  int64  // local position of a verified blank marker, or -1
	reason   string // why scanning stopped before the file's end ("" if it did not)
	records  int
}

// recover verifies the tail of the log, cuts bad or torn data and sets the
// writer position. The segment list is already loaded and not empty.
func (c *CommitLog) recover(recoverFrom int64) error {
	list := c.segs.list
	last := len(list) - 1
	start := last
	switch {
	case recoverFrom > 0:
		start = 0
		if recoverFrom >= list[0].base {
			start = int((recoverFrom - list[0].base) / c.segSize)
		}
		if start > last {
			c.log.Warn().Str("dir", c.dir).Int64("recover_from", recoverFrom).
				Int64("log_end_segment", list[last].base).
				Msg("commitlog: recover-from offset lies beyond the last segment")
			start = last
		}
	case last > 0:
		if size, err := list[last].f.Size(); err != nil {
			return fmt.Errorf("commitlog recover %s: %w", list[last].path, err)
		} else if size == 0 {
			start = last - 1
		}
	}
	info := RecoveryInfo{ScannedFrom: list[start].base, TruncatedAt: -1}
	keep := len(list)
	for i := start; i < len(list); i++ {
		s := list[i]
		size, err := s.f.Size()
		if err != nil {
			return fmt.Errorf("commitlog recover %s: %w", s.path, err)
		}
		res, err := c.scanSegment(s, size)
		if err != nil {
			return err
		}
		info.ScannedBytes += res.end
		info.Records += res.records
		isLast := i == len(list)-1
		cut := res.end
		reason := res.reason
		if isLast && res.blankAt >= 0 {
			// A blank marker is only written together with the first entry
			// of the next segment; without that segment it is torn state.
			cut = res.blankAt
			if reason == "" {
				reason = "blank marker without a following segment"
			}
		}
		if cut < size {
			if err := c.truncateSegment(s, cut); err != nil {
				return err
			}
			info.TruncatedBytes += size - cut
			if info.TruncatedAt < 0 {
				info.TruncatedAt = s.base + cut
				info.Reason = reason
			}
		}
		if !isLast && !res.complete {
			if info.TruncatedAt < 0 {
				info.TruncatedAt = s.base + cut
				info.Reason = "segment ends early but later segments exist"
			}
			keep = i + 1
			break
		}
	}
	if keep < len(list) {
		n, err := c.deleteSegments(keep)
		info.TruncatedBytes += n
		info.DeletedSegments = len(list) - keep
		if err != nil {
			return err
		}
	}
	if err := c.syncFrom(start); err != nil {
		return err
	}

	tail := c.segs.list[len(c.segs.list)-1]
	size, err := tail.f.Size()
	if err != nil {
		return fmt.Errorf("commitlog recover %s: %w", tail.path, err)
	}
	c.w.pos = tail.base + size
	c.w.seg = tail
	c.maxOffset.Store(c.w.pos)
	c.flushed.Store(c.w.pos)
	c.recovery = info

	ev := c.log.Debug()
	if info.TruncatedAt >= 0 {
		ev = c.log.Warn()
	}
	ev.Str("dir", c.dir).Int64("scanned_from", info.ScannedFrom).Int64("scanned_bytes", info.ScannedBytes).
		Int("records", info.Records).Int64("truncated_at", info.TruncatedAt).
		Int64("truncated_bytes", info.TruncatedBytes).Int("deleted_segments", info.DeletedSegments).
		Str("reason", info.Reason).Int64("max_offset", c.w.pos).Msg("commitlog: recovered")
	return nil
}

// scanSegment verifies the entries of one segment file of the given size from
// its start. I/O errors are returned; bad data ends the scan with a reason.
func (c *CommitLog) scanSegment(s *segment, size int64) (scanResult, error) {
	res := scanResult{blankAt: -1}
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, size), 1<<20)
	var hdr [headerSize]byte
	var buf []byte
	pos := int64(0)
	stop := func(reason string) (scanResult, error) {
		res.end, res.reason = pos, reason
		return res, nil
	}
	for {
		remaining := c.segSize - pos
		if pos == size {
			res.end, res.complete = pos, remaining < blankSize
			return res, nil
		}
		if remaining < blankSize {
			res.complete = true
			return stop("bytes past the segment end")
		}
		if size-pos < headerSize {
			return stop("torn entry header")
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return res, fmt.Errorf("commitlog recover %s at %d: %w", s.path, pos, err)
		}
		total := int64(binary.BigEndian.Uint32(hdr[0:4]))
		switch magic := binary.BigEndian.Uint32(hdr[4:8]); {
		case magic == magicBlank:
			if total != remaining {
				return stop(fmt.Sprintf("blank marker size %d, expected %d", total, remaining))
			}
			res.blankAt, res.complete = pos, true
			pos += blankSize
			if pos < size {
				return stop("bytes after the blank marker")
			}
			res.end = pos
			return res, nil
		case isRecordMagic(magic):
			n := total + crcSize
			if total < MinRecordSize || n > remaining {
				return stop(fmt.Sprintf("bad record size %d", total))
			}
			if pos+n > size {
				return stop("torn record")
			}
			if int64(cap(buf)) < n {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			copy(buf, hdr[:])
			if _, err := io.ReadFull(r, buf[headerSize:]); err != nil {
				return res, fmt.Errorf("commitlog recover %s at %d: %w", s.path, pos, err)
			}
			if reason := verifyEntry(buf, s.base+pos); reason != "" {
				return stop(reason)
			}
			pos += n
			res.records++
		default:
			return stop(fmt.Sprintf("bad magic %#08x", magic))
		}
	}
}

// truncateSegment cuts a segment file to size and fsyncs it.
func (c *CommitLog) truncateSegment(s *segment, size int64) error {
	if err := s.f.Truncate(size); err != nil {
		return fmt.Errorf("commitlog recover truncate %s to %d: %w", s.path, size, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("commitlog recover sync %s: %w", s.path, err)
	}
	return nil
}

// deleteSegments closes and removes segments list[keep:], fsyncs the
// directory and returns the number of bytes removed.
func (c *CommitLog) deleteSegments(keep int) (int64, error) {
	c.segs.Lock()
	gone := c.segs.list[keep:]
	c.segs.list = c.segs.list[:keep:keep]
	c.segs.Unlock()
	var removed int64
	var errs []error
	for _, s := range gone {
		if size, err := s.f.Size(); err == nil {
			removed += size
		}
		_ = s.f.Close()
		if err := c.fs.Remove(s.path); err != nil {
			errs = append(errs, fmt.Errorf("commitlog remove %s: %w", s.path, err))
		}
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("commitlog sync dir %s: %w", c.dir, err))
	}
	return removed, errors.Join(errs...)
}

// syncFrom fsyncs every segment from index i on.
func (c *CommitLog) syncFrom(i int) error {
	for _, s := range c.segs.list[min(i, len(c.segs.list)):] {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("commitlog recover sync %s: %w", s.path, err)
		}
	}
	return nil
}
