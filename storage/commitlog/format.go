package commitlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// On-disk constants. These are part of the file format and must not change.
const (
	magicV1    uint32 = 0xDAA320A7 // RocketMQ MESSAGE_MAGIC_CODE
	magicV2    uint32 = 0xDAA320AB // RocketMQ MESSAGE_MAGIC_CODE_V2
	magicBlank uint32 = 0xCBD43194 // RocketMQ BLANK_MAGIC_CODE (end of segment)

	// MinRecordSize is the smallest record Append accepts: enough to hold
	// TOTALSIZE, MAGICCODE and PHYSICALOFFSET. Real RocketMQ records are at
	// least 92 bytes; package message checks the full layout.
	MinRecordSize = 36

	crcSize        = 4  // CRC32C trailer after every record
	blankSize      = 8  // TOTALSIZE + MAGICCODE of a blank marker
	headerSize     = 8  // TOTALSIZE + MAGICCODE
	physOffsetPos  = 28 // PHYSICALOFFSET field inside a record
	segmentNameLen = 20 // digits in a segment file name
)

// castagnoli is the CRC32C table used for entry checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum returns the CRC32C of a record.
func checksum(record []byte) uint32 { return crc32.Checksum(record, castagnoli) }

// isRecordMagic reports whether m is a record (non-blank) magic code.
func isRecordMagic(m uint32) bool { return m == magicV1 || m == magicV2 }

// checkRecord validates a record handed to Append.
func checkRecord(r []byte, segSize int64) error {
	if len(r) < MinRecordSize {
		return fmt.Errorf("length %d below %d: %w", len(r), MinRecordSize, ErrInvalidRecord)
	}
	if int64(len(r))+crcSize > segSize {
		return fmt.Errorf("length %d with segment size %d: %w", len(r), segSize, ErrRecordTooLarge)
	}
	if size := binary.BigEndian.Uint32(r[0:4]); int64(size) != int64(len(r)) {
		return fmt.Errorf("TOTALSIZE %d but length %d: %w", size, len(r), ErrInvalidRecord)
	}
	if m := binary.BigEndian.Uint32(r[4:8]); !isRecordMagic(m) {
		return fmt.Errorf("magic %#08x: %w", m, ErrInvalidRecord)
	}
	return nil
}

// appendEntry appends record and its CRC32C to buf.
func appendEntry(buf, record []byte) []byte {
	buf = append(buf, record...)
	return binary.BigEndian.AppendUint32(buf, checksum(record))
}

// appendBlank appends a blank marker covering remaining bytes to buf.
func appendBlank(buf []byte, remaining int64) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(remaining))
	return binary.BigEndian.AppendUint32(buf, magicBlank)
}

// verifyEntry checks a whole entry (record plus CRC32C) read back from offset.
// It returns a reason for the first failed check, or "" when the entry is
// good.
func verifyEntry(entry []byte, offset int64) string {
	n := len(entry) - crcSize
	if n < MinRecordSize {
		return "short entry"
	}
	record := entry[:n]
	if size := binary.BigEndian.Uint32(record[0:4]); int64(size) != int64(n) {
		return fmt.Sprintf("TOTALSIZE %d, expected %d", size, n)
	}
	if m := binary.BigEndian.Uint32(record[4:8]); !isRecordMagic(m) {
		return fmt.Sprintf("bad magic %#08x", m)
	}
	if want, got := binary.BigEndian.Uint32(entry[n:]), checksum(record); want != got {
		return fmt.Sprintf("checksum mismatch: stored %#08x, computed %#08x", want, got)
	}
	if p := int64(binary.BigEndian.Uint64(record[physOffsetPos:])); p != offset {
		return fmt.Sprintf("PHYSICALOFFSET %d, expected %d", p, offset)
	}
	return ""
}

// segmentName returns the file name of the segment starting at base.
func segmentName(base int64) string { return fmt.Sprintf("%0*d", segmentNameLen, base) }

// parseSegmentName returns the base offset encoded in a segment file name.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != segmentNameLen {
		return 0, false
	}
	var v int64
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if v > (1<<63-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
