package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// EntryKind classifies what ScanSegment found at a position of a segment.
type EntryKind uint8

const (
	// EntryRecord is a verified record (size, magic, CRC32C and
	// PHYSICALOFFSET all check).
	EntryRecord EntryKind = iota + 1
	// EntryBlank is a verified blank marker: the segment's end.
	EntryBlank
	// EntryDamaged is a span that fails verification and is followed by a
	// valid entry in the same segment: damage inside the log.
	EntryDamaged
	// EntryTorn is a span that fails verification with no valid entry after
	// it in the file (a torn tail, bytes after a blank marker, or bytes past
	// the segment's end).
	EntryTorn
)

// String names the kind.
func (k EntryKind) String() string {
	switch k {
	case EntryRecord:
		return "record"
	case EntryBlank:
		return "blank"
	case EntryDamaged:
		return "damaged"
	case EntryTorn:
		return "torn"
	default:
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
}

// Entry is one item found by ScanSegment.
type Entry struct {
	Kind EntryKind
	// Offset is the global offset of the entry's first byte.
	Offset int64
	// Size is the number of bytes the item covers: record plus CRC32C, the
	// blank marker's 8 bytes, or the whole damaged or torn span.
	Size int64
	// Record is the record bytes (EntryRecord only), valid during the
	// callback only.
	Record []byte
	// Reason says why the first bytes of a damaged or torn span failed.
	Reason string
}

// maxWindow is the read window of a segment scan.
const maxWindow = 1 << 20

// segReader reads a segment file through a window, so that sequential
// scans cost one pread per window rather than per entry.
type segReader struct {
	r      io.ReaderAt
	size   int64 // bytes that may be read (file length or a read limit)
	buf    []byte
	wStart int64 // local position of buf[0]
}

// bytes returns the n bytes at local position pos (n <= size-pos), valid
// until the next call.
func (sr *segReader) bytes(pos, n int64) ([]byte, error) {
	if pos >= sr.wStart && pos+n <= sr.wStart+int64(len(sr.buf)) {
		return sr.buf[pos-sr.wStart : pos-sr.wStart+n], nil
	}
	want := max(n, min(int64(maxWindow), sr.size-pos))
	if int64(cap(sr.buf)) < want {
		sr.buf = make([]byte, want)
	}
	sr.buf = sr.buf[:want]
	got, err := sr.r.ReadAt(sr.buf, pos)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) >= n) {
		sr.buf, sr.wStart = sr.buf[:0], 0
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read at %d: %w", pos, shortIsCorrupt(err))
		}
		return nil, fmt.Errorf("read at %d: %w", pos, err)
	}
	sr.buf, sr.wStart = sr.buf[:got], pos
	return sr.buf[:n], nil
}

// segScan verifies entries of one segment. base is the segment's global
// offset; sr.size limits what is read.
type segScan struct {
	sr      segReader
	base    int64
	segSize int64
}

// check verifies the entry at local position pos. It returns its kind
// (EntryRecord or EntryBlank, 0 when invalid), its size, the record (valid
// until the next read) and, when invalid, the reason.
func (s *segScan) check(pos int64) (EntryKind, int64, []byte, string, error) {
	remaining := s.segSize - pos
	avail := s.sr.size - pos
	if avail < headerSize {
		return 0, 0, nil, "torn entry header", nil
	}
	hdr, err := s.sr.bytes(pos, headerSize)
	if err != nil {
		return 0, 0, nil, "", err
	}
	total := int64(binary.BigEndian.Uint32(hdr[0:4]))
	magic := binary.BigEndian.Uint32(hdr[4:8])
	switch {
	case magic == magicBlank:
		if total != remaining {
			return 0, 0, nil, fmt.Sprintf("blank marker size %d, expected %d", total, remaining), nil
		}
		return EntryBlank, blankSize, nil, "", nil
	case !isRecordMagic(magic):
		return 0, 0, nil, fmt.Sprintf("bad magic %#08x", magic), nil
	}
	n := total + crcSize
	if total < MinRecordSize || n > remaining {
		return 0, 0, nil, fmt.Sprintf("bad record size %d", total), nil
	}
	if n > avail {
		return 0, 0, nil, "torn record", nil
	}
	entry, err := s.sr.bytes(pos, n)
	if err != nil {
		return 0, 0, nil, "", err
	}
	if reason := verifyEntry(entry, s.base+pos); reason != "" {
		return 0, 0, nil, reason, nil
	}
	return EntryRecord, n, entry[:total:total], "", nil
}

// plausibleSize returns the entry size the header at pos claims when the
// header looks like a record's (record magic, sane size), else 0.
func (s *segScan) plausibleSize(pos int64) (int64, error) {
	if s.sr.size-pos < headerSize {
		return 0, nil
	}
	hdr, err := s.sr.bytes(pos, headerSize)
	if err != nil {
		return 0, err
	}
	total := int64(binary.BigEndian.Uint32(hdr[0:4]))
	if !isRecordMagic(binary.BigEndian.Uint32(hdr[4:8])) || total < MinRecordSize || total+crcSize > s.segSize-pos {
		return 0, nil
	}
	return total + crcSize, nil
}

// next returns the local position of the first valid entry (record or
// blank marker) after the invalid entry at bad, or sr.size when there is
// none. When the bad entry's header is intact, the position right after the
// span it claims is tried first, so that damage inside a record's body is
// skipped as exactly that record.
func (s *segScan) next(bad int64) (int64, error) {
	if n, err := s.plausibleSize(bad); err != nil {
		return 0, err
	} else if n > 0 && bad+n < s.sr.size {
		if k, _, _, _, err := s.check(bad + n); err != nil {
			return 0, err
		} else if k != 0 {
			return bad + n, nil
		}
	}
	// A valid entry has a record or blank magic at +4: test those
	// positions only, reading the file window by window.
	limit := min(s.sr.size, s.segSize)
	for pos := bad + 1; pos+headerSize <= limit; {
		chunk := min(int64(maxWindow), s.sr.size-pos)
		win, err := s.sr.bytes(pos, chunk)
		if err != nil {
			return 0, err
		}
		found := int64(-1)
		for i := int64(0); i+headerSize <= int64(len(win)) && pos+i+headerSize <= limit; i++ {
			m := binary.BigEndian.Uint32(win[i+4:])
			if isRecordMagic(m) || m == magicBlank {
				found = pos + i
				break
			}
		}
		if found < 0 {
			step := chunk - headerSize + 1
			if step <= 0 || pos+chunk >= s.sr.size {
				break
			}
			pos += step
			continue
		}
		k, _, _, _, err := s.check(found)
		if err != nil {
			return 0, err
		}
		if k != 0 {
			return found, nil
		}
		pos = found + 1
	}
	return s.sr.size, nil
}

// ScanSegment verifies a segment file from its start and calls fn for each
// record, the blank marker, and each damaged or torn span, in order. r reads
// the file, base is the segment's global offset, size the file's length
// and segSize the logical segment size. A damaged span ends at the next
// entry that verifies (found by scanning forward for one); a span after
// which nothing verifies is reported as EntryTorn and ends the scan.
// complete reports whether the segment is properly finished (a blank marker,
// or fewer than 8 bytes left before the segment end), so that a next
// segment may follow. Only I/O errors and fn's errors are returned. The
// function only reads.
func ScanSegment(r io.ReaderAt, base, size, segSize int64, fn func(Entry) error) (complete bool, err error) {
	s := &segScan{sr: segReader{r: r, size: size}, base: base, segSize: segSize}
	pos := int64(0)
	for pos < size {
		if segSize-pos < blankSize {
			return true, fn(Entry{Kind: EntryTorn, Offset: base + pos, Size: size - pos, Reason: "bytes past the segment end"})
		}
		kind, n, rec, reason, err := s.check(pos)
		if err != nil {
			return false, fmt.Errorf("commitlog scan segment %d: %w", base, err)
		}
		switch kind {
		case EntryRecord:
			if err := fn(Entry{Kind: EntryRecord, Offset: base + pos, Size: n, Record: rec}); err != nil {
				return false, err
			}
			pos += n
			continue
		case EntryBlank:
			if err := fn(Entry{Kind: EntryBlank, Offset: base + pos, Size: segSize - pos}); err != nil {
				return true, err
			}
			if pos+blankSize < size {
				return true, fn(Entry{Kind: EntryTorn, Offset: base + pos + blankSize, Size: size - pos - blankSize,
					Reason: "bytes after the blank marker"})
			}
			return true, nil
		}
		q, err := s.next(pos)
		if err != nil {
			return false, fmt.Errorf("commitlog scan segment %d: %w", base, err)
		}
		if q >= size {
			return false, fn(Entry{Kind: EntryTorn, Offset: base + pos, Size: size - pos, Reason: reason})
		}
		if err := fn(Entry{Kind: EntryDamaged, Offset: base + pos, Size: q - pos, Reason: reason}); err != nil {
			return false, err
		}
		pos = q
	}
	return segSize-pos < blankSize, nil
}

// CheckEntry verifies one entry (record followed by its CRC32C) read from
// global offset off: size, magic, checksum and PHYSICALOFFSET. It returns
// nil or an error wrapping ErrCorrupt that says what failed.
func CheckEntry(entry []byte, off int64) error {
	if reason := verifyEntry(entry, off); reason != "" {
		return fmt.Errorf("entry at %d: %s: %w", off, reason, ErrCorrupt)
	}
	return nil
}

// EntryOverhead is the number of bytes an entry adds to its record (the
// CRC32C trailer).
const EntryOverhead = crcSize

// NextValid returns the global offset of the first entry after the invalid
// entry at from that verifies, for readers that skip damage (the dispatch
// stage): a record, a blank marker, or a segment start. When nothing below
// MaxOffset verifies, it returns MaxOffset. When the bad entry's header is
// intact and the entry right after the span it claims verifies, that is the
// answer, so damage inside one record skips exactly that record. Safe for
// concurrent use, also with Append.
func (c *CommitLog) NextValid(from int64) (int64, error) {
	limit := c.maxOffset.Load()
	if from < 0 || from >= limit {
		return 0, fmt.Errorf("commitlog next valid %s after %d (max %d): %w", c.dir, from, limit, ErrOutOfRange)
	}
	s, err := c.pin(from)
	if err != nil {
		return 0, fmt.Errorf("commitlog next valid %s after %d: %w", c.dir, from, err)
	}
	defer c.unpin()
	end := min(s.base+c.segSize, limit)
	fsize, err := s.f.Size()
	if err != nil {
		return 0, fmt.Errorf("commitlog next valid %s: %w", s.path, err)
	}
	// Files are not padded: a segment ending with a blank marker is
	// shorter than the segment size.
	avail := min(fsize, end-s.base)
	if from-s.base >= avail {
		return end, nil
	}
	sc := &segScan{sr: segReader{r: s.f, size: avail}, base: s.base, segSize: c.segSize}
	q, err := sc.next(from - s.base)
	if err != nil {
		return 0, fmt.Errorf("commitlog next valid %s: %w", s.path, err)
	}
	if q < avail {
		return s.base + q, nil
	}
	return end, nil
}

// EntryAt classifies the bytes at global offset off of a segment file,
// read-only (inspection tools): a record or blank marker that verifies, or a
// damaged span up to the next entry that verifies (EntryTorn when nothing
// after it in the file does). r reads the file, base is the segment's global
// offset, size the file's length and segSize the logical segment size.
func EntryAt(r io.ReaderAt, base, size, segSize, off int64) (Entry, error) {
	pos := off - base
	if pos < 0 || pos >= size {
		return Entry{}, fmt.Errorf("commitlog entry at %d: outside segment %d (%d bytes): %w", off, base, size, ErrOutOfRange)
	}
	s := &segScan{sr: segReader{r: r, size: size}, base: base, segSize: segSize}
	if segSize-pos < blankSize {
		return Entry{Kind: EntryTorn, Offset: off, Size: size - pos, Reason: "bytes past the segment end"}, nil
	}
	kind, n, rec, reason, err := s.check(pos)
	if err != nil {
		return Entry{}, fmt.Errorf("commitlog entry at %d: %w", off, err)
	}
	switch kind {
	case EntryRecord:
		return Entry{Kind: kind, Offset: off, Size: n, Record: append([]byte(nil), rec...)}, nil
	case EntryBlank:
		return Entry{Kind: kind, Offset: off, Size: segSize - pos}, nil
	}
	q, err := s.next(pos)
	if err != nil {
		return Entry{}, fmt.Errorf("commitlog entry at %d: %w", off, err)
	}
	if q >= size {
		return Entry{Kind: EntryTorn, Offset: off, Size: size - pos, Reason: reason}, nil
	}
	return Entry{Kind: EntryDamaged, Offset: off, Size: q - pos, Reason: reason}, nil
}

// SegmentName returns the file name of the segment starting at global
// offset base.
func SegmentName(base int64) string { return segmentName(base) }

// ParseSegmentName returns the global offset a segment file name encodes.
func ParseSegmentName(name string) (int64, bool) { return parseSegmentName(name) }
