package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultBlockSize is the read size ReadBlock uses when maxBytes <= 0.
const DefaultBlockSize = 256 << 10

// ReadBlock reads the records from offset onwards with one positional read
// of up to maxBytes (more when the first record is larger), for sequential
// scans such as the consume-queue dispatcher. It returns the records, the
// offset of each one, and the offset to continue from. Blank markers are
// skipped like Read skips them. At MaxOffset it returns io.EOF with no
// records. Every entry is verified: a damaged entry after at least one good
// record ends the block there (next is its offset, and the next call reports
// it); a damaged first entry returns an error wrapping ErrCorrupt with next
// set to the damaged entry's offset (see NextValid). The records alias one
// buffer owned by the caller. Safe for concurrent use, also with Append.
func (c *CommitLog) ReadBlock(offset int64, maxBytes int) (records [][]byte, offsets []int64, next int64, err error) {
	return c.ReadBlockWith(nil, offset, maxBytes)
}

// BlockReader keeps ReadBlockWith's buffers from call to call, for a
// sequential reader (the dispatcher, the index) that would otherwise
// allocate a block buffer and two slices per read. Use one per reader.
type BlockReader struct {
	buf     []byte
	records [][]byte
	offsets []int64
}

// maxKeptBlock is the largest block buffer a BlockReader keeps.
const maxKeptBlock = 1 << 20

// ReadBlockWith is ReadBlock reading into r's buffers (r nil: new ones):
// what it returns is valid until the next call with r.
func (c *CommitLog) ReadBlockWith(r *BlockReader, offset int64, maxBytes int) (records [][]byte, offsets []int64, next int64, err error) {
	if maxBytes <= 0 {
		maxBytes = DefaultBlockSize
	}
	if r != nil {
		records, offsets = r.records[:0], r.offsets[:0]
		defer func() {
			if cap(records) > cap(r.records) {
				r.records, r.offsets = records[:0], offsets[:0]
			}
		}()
	}
	for {
		limit := c.maxOffset.Load()
		if offset == limit {
			return nil, nil, offset, io.EOF
		}
		if offset < 0 || offset > limit {
			return nil, nil, offset, fmt.Errorf("commitlog read %s at %d (max %d): %w", c.dir, offset, limit, ErrOutOfRange)
		}
		end := offset - offset%c.segSize + c.segSize // segments are aligned to segSize
		if end-offset < blankSize {
			offset = end
			continue
		}
		buf, err := c.readRaw(offset, min(int64(maxBytes), min(end, limit)-offset), r)
		if err != nil {
			return nil, nil, offset, err
		}
		pos := 0
		for len(buf)-pos >= headerSize {
			total := int64(binary.BigEndian.Uint32(buf[pos:]))
			magic := binary.BigEndian.Uint32(buf[pos+4:])
			at := offset + int64(pos)
			if magic == magicBlank {
				if total != end-at {
					if len(records) > 0 {
						return records, offsets, at, nil // the next call reports it
					}
					return nil, nil, at, fmt.Errorf("commitlog read %s at %d: blank marker size %d: %w",
						c.dir, at, total, ErrCorrupt)
				}
				if len(records) > 0 {
					return records, offsets, end, nil
				}
				offset = end
				break
			}
			n := total + crcSize
			if !isRecordMagic(magic) || total < MinRecordSize || n > end-at {
				if len(records) > 0 {
					return records, offsets, at, nil // the next call reports it
				}
				return nil, nil, at, fmt.Errorf("commitlog read %s at %d: header size %d magic %#08x: %w",
					c.dir, at, total, magic, ErrCorrupt)
			}
			if int64(len(buf)-pos) < n {
				if len(records) == 0 {
					// One record larger than the block: read it alone.
					rec, nx, err := c.Read(at)
					if err != nil {
						return nil, nil, at, err
					}
					return [][]byte{rec}, []int64{at}, nx, nil
				}
				return records, offsets, at, nil
			}
			entry := buf[pos : pos+int(n)]
			if reason := verifyEntry(entry, at); reason != "" {
				if len(records) > 0 {
					return records, offsets, at, nil // the next call reports it
				}
				return nil, nil, at, fmt.Errorf("commitlog read %s at %d: %s: %w", c.dir, at, reason, ErrCorrupt)
			}
			records = append(records, entry[:total:total])
			offsets = append(offsets, at)
			pos += int(n)
		}
		if len(records) > 0 {
			return records, offsets, offset + int64(pos), nil
		}
		if pos == 0 && len(buf) < headerSize {
			// A tail shorter than a header before the segment end.
			if end-offset < blankSize {
				offset = end
				continue
			}
			return nil, nil, offset, fmt.Errorf("commitlog read %s at %d: %d bytes left: %w", c.dir, offset, len(buf), ErrCorrupt)
		}
	}
}

// readRaw preads up to n bytes at global offset off from the segment
// holding it (pinned meanwhile). Segment files are not padded: a blank
// marker may be the file's last bytes, so a short read is normal here and
// the caller checks each entry.
func (c *CommitLog) readRaw(off, n int64, r *BlockReader) ([]byte, error) {
	s, err := c.pin(off)
	if err != nil {
		return nil, fmt.Errorf("commitlog read %s at %d: %w", c.dir, off, err)
	}
	defer c.unpin()
	var buf []byte
	if r != nil && int64(cap(r.buf)) >= n {
		buf = r.buf[:n]
	} else {
		buf = make([]byte, n)
		if r != nil && n <= maxKeptBlock {
			r.buf = buf
		}
	}
	got, err := s.f.ReadAt(buf, off-s.base)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("commitlog read %s at %d: %w", s.path, off-s.base, err)
	}
	return buf[:got], nil
}
