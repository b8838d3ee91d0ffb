package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ROCKETMQ binary header (serialize type 1), big-endian:
//
//	+------+------+---------+--------+------+-----------+--------+-----------+---------+
//	| code | lang | version | opaque | flag | remark len| remark | ext len E | ext     |
//	| i16  | u8   | i16     | i32    | i32  | i32 R     | R bytes| i32       | E bytes |
//	+------+------+---------+--------+------+-----------+--------+-----------+---------+
//
// ext is a run of entries, each: key length (i16), key, value length (i32),
// value. The fixed part (everything but the two variable runs) is 21 bytes.
// The decoder requires the ext run to end exactly at the end of the header.

// binaryFixedLen is the size of the fixed part of a ROCKETMQ header.
const binaryFixedLen = 2 + 1 + 2 + 4 + 4 + 4 + 4

// decodeBinaryHeader parses a ROCKETMQ binary header. Every length is
// checked against the remaining bytes. An unknown language byte decodes as
// "OTHER". The result's ExtFields is never nil. All strings are substrings
// of one copy of h, so h may be reused afterwards.
func decodeBinaryHeader(h []byte) (*Command, error) {
	c := &Command{}
	if err := decodeBinaryHeaderInto(c, h); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeBinaryHeaderInto is decodeBinaryHeader into c, reusing its
// ExtFields map (cleared) when it has one. On error c is left partly set.
func decodeBinaryHeaderInto(c *Command, h []byte) error {
	if len(h) < binaryFixedLen {
		return fmt.Errorf("remoting decode binary header: %d bytes, fixed part is %d: %w",
			len(h), binaryFixedLen, ErrMalformed)
	}
	ext := c.ExtFields
	*c = Command{
		Code:     int32(int16(binary.BigEndian.Uint16(h[0:]))),
		Language: languageName(h[2]),
		Version:  int32(int16(binary.BigEndian.Uint16(h[3:]))),
		Opaque:   int32(binary.BigEndian.Uint32(h[5:])),
		Flag:     int32(binary.BigEndian.Uint32(h[9:])),
	}
	p := 13
	remarkLen := int64(int32(binary.BigEndian.Uint32(h[p:])))
	p += 4
	// The ext length word (4 bytes) must still follow the remark.
	if remarkLen < 0 || remarkLen > int64(len(h)-p-4) {
		return fmt.Errorf("remoting decode binary header: remark length %d with %d bytes left: %w",
			remarkLen, len(h)-p-4, ErrMalformed)
	}
	hs := string(h) // one allocation for every string in the header
	c.Remark = hs[p : p+int(remarkLen)]
	p += int(remarkLen)
	extLen := int64(int32(binary.BigEndian.Uint32(h[p:])))
	p += 4
	if extLen != int64(len(h)-p) {
		return fmt.Errorf("remoting decode binary header: ext length %d but %d bytes left: %w",
			extLen, len(h)-p, ErrMalformed)
	}
	if ext == nil {
		ext = make(map[string]string)
	} else {
		clear(ext)
	}
	if err := decodeBinaryExt(ext, hs[p:]); err != nil {
		return err
	}
	c.ExtFields = ext
	return nil
}

// decodeBinaryExt parses the ext run into ext: key length (i16), key,
// value length (i32), value, repeated until b is used up.
func decodeBinaryExt(ext map[string]string, b string) error {
	for len(b) > 0 {
		if len(b) < 2 {
			return fmt.Errorf("remoting decode binary ext: %d bytes left for key length: %w", len(b), ErrMalformed)
		}
		kl := int(int16(uint16(b[0])<<8 | uint16(b[1])))
		b = b[2:]
		if kl < 0 || kl+4 > len(b) {
			return fmt.Errorf("remoting decode binary ext: key length %d with %d bytes left: %w", kl, len(b), ErrMalformed)
		}
		key := b[:kl]
		b = b[kl:]
		vl := int64(int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])))
		b = b[4:]
		if vl < 0 || vl > int64(len(b)) {
			return fmt.Errorf("remoting decode binary ext: value length %d with %d bytes left: %w", vl, len(b), ErrMalformed)
		}
		ext[key] = b[:vl]
		b = b[vl:]
	}
	return nil
}

// appendBinaryHeader appends c's header in the ROCKETMQ binary encoding.
// It fails with ErrMalformed when a field does not fit its wire width:
// code and version are 16-bit, keys at most 32767 bytes.
func appendBinaryHeader(dst []byte, c *Command) ([]byte, error) {
	return appendBinaryHeaderTo(dst, c, new(ExtEncoder))
}

// appendBinaryHeaderTo is appendBinaryHeader with e, which the caller
// reuses, writing c.Ext when set.
func appendBinaryHeaderTo(dst []byte, c *Command, e *ExtEncoder) ([]byte, error) {
	if c.Code < math.MinInt16 || c.Code > math.MaxInt16 {
		return dst, fmt.Errorf("remoting encode binary header: code %d does not fit int16: %w", c.Code, ErrMalformed)
	}
	if c.Version < math.MinInt16 || c.Version > math.MaxInt16 {
		return dst, fmt.Errorf("remoting encode binary header: version %d does not fit int16: %w", c.Version, ErrMalformed)
	}
	if int64(len(c.Remark)) > math.MaxInt32 {
		return dst, fmt.Errorf("remoting encode binary header: remark %d bytes: %w", len(c.Remark), ErrFrameTooLarge)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Code)))
	dst = append(dst, languageCode(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Version)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	extAt := len(dst)
	dst = append(dst, 0, 0, 0, 0) // ext length, patched below
	if c.Ext != nil {
		*e = ExtEncoder{dst: dst}
		c.Ext.WriteExt(e)
		dst, e.dst = e.dst, nil
		if e.err != nil {
			return dst[:extAt], e.err
		}
	} else {
		var stack [32]string
		for _, k := range sortedKeys(stack[:0], c.ExtFields) {
			v := c.ExtFields[k]
			if len(k) > math.MaxInt16 {
				return dst[:extAt], fmt.Errorf("remoting encode binary header: key of %d bytes: %w", len(k), ErrMalformed)
			}
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
			dst = append(dst, k...)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
			dst = append(dst, v...)
		}
	}
	extLen := len(dst) - extAt - 4
	if int64(extLen) > math.MaxInt32 {
		return dst[:extAt], fmt.Errorf("remoting encode binary header: ext %d bytes: %w", extLen, ErrFrameTooLarge)
	}
	binary.BigEndian.PutUint32(dst[extAt:], uint32(extLen))
	return dst, nil
}
