package message

import (
	"encoding/binary"
	"fmt"
	"math"
)

// batchFixedSize is the size of a batch entry without body and properties:
// TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN (4 each) and PROPSLEN (2).
const batchFixedSize = 5*4 + 2

// BatchEntry is one message of a SEND_BATCH_MESSAGE body.
type BatchEntry struct {
	// Flag is the message's user flag.
	Flag int32
	// Body is the message body.
	Body []byte
	// Properties is the message's raw encoded properties.
	Properties []byte
}

// DecodeBatch splits a SEND_BATCH_MESSAGE body into its messages. Each entry
// is TOTALSIZE int32, MAGICCODE int32, BODYCRC int32 (both written as 0 by the
// clients and ignored here), FLAG int32, BODYLEN int32 + BODY, PROPSLEN uint16 +
// PROPERTIES, and TOTALSIZE must equal the entry's length. Body and Properties
// alias body. An empty body, a truncated entry or inconsistent lengths wrap
// ErrBadBatch.
func DecodeBatch(body []byte) ([]BatchEntry, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("message batch: empty body: %w", ErrBadBatch)
	}
	be := binary.BigEndian
	var entries []BatchEntry
	for pos := 0; pos < len(body); {
		b := body[pos:]
		if len(b) < batchFixedSize {
			return nil, fmt.Errorf("message batch: entry %d at %d: %d bytes left, need %d: %w",
				len(entries), pos, len(b), batchFixedSize, ErrBadBatch)
		}
		size := int(int32(be.Uint32(b)))
		if size < batchFixedSize || size > len(b) {
			return nil, fmt.Errorf("message batch: entry %d at %d: total size %d, %d bytes left: %w",
				len(entries), pos, size, len(b), ErrBadBatch)
		}
		b = b[:size]
		bodyLen := int(int32(be.Uint32(b[16:])))
		if bodyLen < 0 || bodyLen > size-batchFixedSize {
			return nil, fmt.Errorf("message batch: entry %d at %d: body length %d exceeds total size %d: %w",
				len(entries), pos, bodyLen, size, ErrBadBatch)
		}
		propsAt := 20 + bodyLen
		propsLen := int(be.Uint16(b[propsAt:]))
		if propsAt+2+propsLen != size {
			return nil, fmt.Errorf("message batch: entry %d at %d: total size %d, fields need %d: %w",
				len(entries), pos, size, propsAt+2+propsLen, ErrBadBatch)
		}
		entries = append(entries, BatchEntry{
			Flag:       int32(be.Uint32(b[12:])),
			Body:       b[20:propsAt:propsAt],
			Properties: b[propsAt+2 : size : size],
		})
		pos += size
	}
	return entries, nil
}

// EncodeBatch encodes entries as a SEND_BATCH_MESSAGE body, byte for byte as
// the clients do (MAGICCODE and BODYCRC are 0). It is meant for tests and
// tools; it fails (wrapping ErrBadBatch) if an entry's properties exceed 65535
// bytes or the body would exceed an int32.
func EncodeBatch(entries []BatchEntry) ([]byte, error) {
	total := 0
	for i, e := range entries {
		if len(e.Properties) > math.MaxUint16 {
			return nil, fmt.Errorf("message batch: entry %d: properties of %d bytes: %w", i, len(e.Properties), ErrBadBatch)
		}
		total += batchFixedSize + len(e.Body) + len(e.Properties)
		if total > math.MaxInt32 {
			return nil, fmt.Errorf("message batch: body exceeds %d bytes: %w", math.MaxInt32, ErrBadBatch)
		}
	}
	be := binary.BigEndian
	dst := make([]byte, 0, total)
	for _, e := range entries {
		dst = be.AppendUint32(dst, uint32(batchFixedSize+len(e.Body)+len(e.Properties)))
		dst = be.AppendUint32(dst, 0) // MAGICCODE
		dst = be.AppendUint32(dst, 0) // BODYCRC
		dst = be.AppendUint32(dst, uint32(e.Flag))
		dst = be.AppendUint32(dst, uint32(len(e.Body)))
		dst = append(dst, e.Body...)
		dst = be.AppendUint16(dst, uint16(len(e.Properties)))
		dst = append(dst, e.Properties...)
	}
	return dst, nil
}
