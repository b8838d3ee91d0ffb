package commitlog

import (
	"encoding/binary"
	"fmt"
)

// AppendEntries reads the n bytes of entries stored back to back from
// offset (the records of a run of consume-queue units that follow each
// other in the log) with one positional read into dst's spare capacity
// (grown when it is short), verifies every entry like ReadAt (TOTALSIZE,
// magic, CRC32C, PHYSICALOFFSET), and appends their records without the CRC
// trailers to dst: what a pull answers, with no copy and no allocation when
// dst has room for the n bytes. It returns the extended dst and the number
// of records. The range must hold whole entries inside one segment, below
// MaxOffset (ErrOutOfRange otherwise); a damaged entry fails the whole call
// (ErrCorrupt) and dst is returned unchanged: read the entries one by one to
// tell which. Safe for concurrent use, also with Append.
func (c *CommitLog) AppendEntries(dst []byte, offset, n int64) ([]byte, int, error) {
	if n < MinRecordSize+crcSize || offset < 0 || offset+n > c.maxOffset.Load() {
		return dst, 0, fmt.Errorf("commitlog read %s at %d, %d bytes: %w", c.dir, offset, n, ErrOutOfRange)
	}
	s, err := c.pin(offset)
	if err != nil {
		return dst, 0, fmt.Errorf("commitlog read %s at %d: %w", c.dir, offset, err)
	}
	defer c.unpin()
	local := offset - s.base
	if local+n > c.segSize {
		return dst, 0, fmt.Errorf("commitlog read %s at %d, %d bytes crosses segment end: %w", c.dir, offset, n, ErrOutOfRange)
	}
	start := len(dst)
	if cap(dst)-start < int(n) {
		grown := make([]byte, start, start+int(n))
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:start+int(n)]
	buf := dst[start:]
	if _, err := s.f.ReadAt(buf, local); err != nil {
		return dst[:start], 0, fmt.Errorf("commitlog read %s at %d: %w", s.path, local, shortIsCorrupt(err))
	}
	w, count := start, 0
	for r := 0; r < len(buf); count++ {
		if len(buf)-r < headerSize {
			return dst[:start], 0, fmt.Errorf("commitlog read %s at %d: %d bytes left: %w", c.dir, offset+int64(r), len(buf)-r, ErrCorrupt)
		}
		size := int(binary.BigEndian.Uint32(buf[r:]))
		if size < MinRecordSize || size+crcSize > len(buf)-r {
			return dst[:start], 0, fmt.Errorf("commitlog read %s at %d: TOTALSIZE %d: %w", c.dir, offset+int64(r), size, ErrCorrupt)
		}
		entry := buf[r : r+size+crcSize]
		if reason := verifyEntry(entry, offset+int64(r)); reason != "" {
			return dst[:start], 0, fmt.Errorf("commitlog read %s at %d: %s: %w", c.dir, offset+int64(r), reason, ErrCorrupt)
		}
		copy(dst[w:], entry[:size])
		w += size
		r += size + crcSize
	}
	return dst[:w], count, nil
}
