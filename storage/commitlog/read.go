package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ReadAt returns the record of the given size stored at offset (a
// ConsumeQueue unit's offset and size). The entry is verified (TOTALSIZE,
// magic, CRC32C, PHYSICALOFFSET); a mismatch returns an error wrapping
// ErrCorrupt. Only whole entries below MaxOffset can be read
// (ErrOutOfRange otherwise). Safe for concurrent use, also with Append.
func (c *CommitLog) ReadAt(offset int64, size int32) ([]byte, error) {
	n := int64(size) + crcSize
	if size < MinRecordSize || offset < 0 || offset+n > c.maxOffset.Load() {
		return nil, fmt.Errorf("commitlog read %s at %d size %d: %w", c.dir, offset, size, ErrOutOfRange)
	}
	s, err := c.pin(offset)
	if err != nil {
		return nil, fmt.Errorf("commitlog read %s at %d: %w", c.dir, offset, err)
	}
	defer c.unpin()
	local := offset - s.base
	if local+n > c.segSize {
		return nil, fmt.Errorf("commitlog read %s at %d size %d crosses segment end: %w",
			c.dir, offset, size, ErrOutOfRange)
	}
	entry := make([]byte, n)
	if _, err := s.f.ReadAt(entry, local); err != nil {
		return nil, fmt.Errorf("commitlog read %s at %d: %w", s.path, local, shortIsCorrupt(err))
	}
	if reason := verifyEntry(entry, offset); reason != "" {
		return nil, fmt.Errorf("commitlog read %s at %d: %s: %w", c.dir, offset, reason, ErrCorrupt)
	}
	return entry[:size:size], nil
}

// Read returns the record at offset and the offset of the entry after it.
// A blank marker (or a segment tail too short for one) at offset is skipped:
// Read then returns the first record of the next segment. At MaxOffset it
// returns io.EOF, with next set to the offset to retry from later. The entry
// is verified like ReadAt (ErrCorrupt); an offset that is not an entry
// boundary also yields ErrCorrupt. Safe for concurrent use, also with Append.
func (c *CommitLog) Read(offset int64) (record []byte, next int64, err error) {
	for {
		limit := c.maxOffset.Load()
		if offset == limit {
			return nil, offset, io.EOF
		}
		if offset < 0 || offset > limit {
			return nil, offset, fmt.Errorf("commitlog read %s at %d (max %d): %w", c.dir, offset, limit, ErrOutOfRange)
		}
		record, next, skip, err := c.readEntry(offset, limit)
		if skip {
			offset = next
			continue
		}
		return record, next, err
	}
}

// readEntry is one step of Read: the entry at offset, or skip with the
// next segment's start when offset is at a blank marker or a segment tail
// too short for one.
func (c *CommitLog) readEntry(offset, limit int64) (record []byte, next int64, skip bool, err error) {
	s, err := c.pin(offset)
	if err != nil {
		return nil, offset, false, fmt.Errorf("commitlog read %s at %d: %w", c.dir, offset, err)
	}
	defer c.unpin()
	local := offset - s.base
	end := s.base + c.segSize
	if end-offset < blankSize {
		return nil, end, true, nil
	}
	avail := min(end, limit) - offset
	if avail < headerSize {
		return nil, offset, false, fmt.Errorf("commitlog read %s at %d: %d bytes left: %w", c.dir, offset, avail, ErrCorrupt)
	}
	var hdr [headerSize]byte
	if _, err := s.f.ReadAt(hdr[:], local); err != nil {
		return nil, offset, false, fmt.Errorf("commitlog read %s at %d: %w", s.path, local, shortIsCorrupt(err))
	}
	total := int64(binary.BigEndian.Uint32(hdr[0:4]))
	magic := binary.BigEndian.Uint32(hdr[4:8])
	if magic == magicBlank {
		if total != end-offset {
			return nil, offset, false, fmt.Errorf("commitlog read %s at %d: blank marker size %d: %w",
				c.dir, offset, total, ErrCorrupt)
		}
		return nil, end, true, nil
	}
	n := total + crcSize
	if !isRecordMagic(magic) || total < MinRecordSize || n > avail {
		return nil, offset, false, fmt.Errorf("commitlog read %s at %d: header size %d magic %#08x: %w",
			c.dir, offset, total, magic, ErrCorrupt)
	}
	entry := make([]byte, n)
	copy(entry, hdr[:])
	if _, err := s.f.ReadAt(entry[headerSize:], local+headerSize); err != nil {
		return nil, offset, false, fmt.Errorf("commitlog read %s at %d: %w", s.path, local, shortIsCorrupt(err))
	}
	if reason := verifyEntry(entry, offset); reason != "" {
		return nil, offset, false, fmt.Errorf("commitlog read %s at %d: %s: %w", c.dir, offset, reason, ErrCorrupt)
	}
	return entry[:total:total], offset + n, false, nil
}

// shortIsCorrupt maps a short read below MaxOffset (the file lost bytes that
// were written) to ErrCorrupt; other I/O errors pass through.
func shortIsCorrupt(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("file shorter than the log: %w", ErrCorrupt)
	}
	return err
}

// Header returns the TOTALSIZE field stored at offset and whether its
// MAGICCODE is a record's, without verifying the entry: readers use it to
// tell a damaged record (header matches what they expected, bytes do not
// verify) from a pointer that does not lead to a record. Safe for
// concurrent use, also with Append.
func (c *CommitLog) Header(offset int64) (size int32, isRecord bool, err error) {
	if offset < 0 || offset+headerSize > c.maxOffset.Load() {
		return 0, false, fmt.Errorf("commitlog header %s at %d: %w", c.dir, offset, ErrOutOfRange)
	}
	s, err := c.pin(offset)
	if err != nil {
		return 0, false, fmt.Errorf("commitlog header %s at %d: %w", c.dir, offset, err)
	}
	defer c.unpin()
	var hdr [headerSize]byte
	if _, err := s.f.ReadAt(hdr[:], offset-s.base); err != nil {
		return 0, false, fmt.Errorf("commitlog header %s at %d: %w", s.path, offset-s.base, shortIsCorrupt(err))
	}
	return int32(binary.BigEndian.Uint32(hdr[0:4])), isRecordMagic(binary.BigEndian.Uint32(hdr[4:8])), nil
}
