package commitlog

import (
	"errors"
	"fmt"
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
	// Damaged lists spans inside the scanned data that failed verification
	// but were followed by valid entries: they are kept (readers skip them,
	// see NextValid) rather than cut with everything after them.
	Damaged []Damage
}

// Damage is a span of the log that fails verification.
type Damage struct {
	// Offset is the global offset of the span's first byte.
	Offset int64
	// Size is the span's length in bytes.
	Size int64
	// Reason says what failed first.
	Reason string
}

// scanResult is the outcome of verifying one segment file.
type scanResult struct {
	end      int64  // local end of the verified data
	complete bool   // segment properly finished; the next segment may follow
	blankAt  int64  // local position of a verified blank marker, or -1
	reason   string // why scanning stopped before the file's end ("" if it did not)
	records  int
	damaged  []Damage // damaged spans kept
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
			// of the next segment; without that segment it is torn state,
			// and so is damage right before it (nothing valid follows).
			cut = res.blankAt
			if reason == "" {
				reason = "blank marker without a following segment"
			}
			if k := len(res.damaged) - 1; k >= 0 && res.damaged[k].Offset+res.damaged[k].Size == s.base+cut {
				cut, reason = res.damaged[k].Offset-s.base, res.damaged[k].Reason
				res.damaged = res.damaged[:k]
			}
		}
		info.Damaged = append(info.Damaged, res.damaged...)
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

	for _, d := range info.Damaged {
		c.log.Error().Str("dir", c.dir).Int64("offset", d.Offset).Int64("bytes", d.Size).Str("reason", d.Reason).
			Msg("commitlog: damaged span inside the log kept; readers skip it")
	}
	ev := c.log.Debug()
	if info.TruncatedAt >= 0 {
		ev = c.log.Warn()
	}
	ev.Str("dir", c.dir).Int64("scanned_from", info.ScannedFrom).Int64("scanned_bytes", info.ScannedBytes).
		Int("records", info.Records).Int64("truncated_at", info.TruncatedAt).
		Int64("truncated_bytes", info.TruncatedBytes).Int("deleted_segments", info.DeletedSegments).
		Str("reason", info.Reason).Int("damaged_spans", len(info.Damaged)).Int64("max_offset", c.w.pos).
		Msg("commitlog: recovered")
	return nil
}

// scanSegment verifies the entries of one segment file of the given size from
// its start. A damaged span followed by valid entries is kept and reported
// (bit rot inside the log, or pages written back out of order): cutting
// there would drop the valid records after it. The first span with nothing
// valid after it ends the scan: that is the torn tail. I/O errors are
// returned.
func (c *CommitLog) scanSegment(s *segment, size int64) (scanResult, error) {
	res := scanResult{blankAt: -1, end: size}
	complete, err := ScanSegment(s.f, s.base, size, c.segSize, func(e Entry) error {
		switch e.Kind {
		case EntryRecord:
			res.records++
		case EntryBlank:
			res.blankAt = e.Offset - s.base
		case EntryDamaged:
			res.damaged = append(res.damaged, Damage{Offset: e.Offset, Size: e.Size, Reason: e.Reason})
		case EntryTorn:
			res.end, res.reason = e.Offset-s.base, e.Reason
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("commitlog recover %s: %w", s.path, err)
	}
	res.complete = complete
	return res, nil
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
