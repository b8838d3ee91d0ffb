package remoting

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"
)

// DefaultMaxFrame is the default limit on a frame's total length L (the
// bytes after the 4-byte length field): a 4 MiB message body plus room for
// the header. Java brokers accept up to 16 MiB; RocketMQ clients refuse
// message bodies above 4 MiB by default.
const DefaultMaxFrame = 4<<20 + 256<<10

// Frame layout constants. These are part of the wire format.
const (
	// lengthFieldSize is the size of the total-length field that starts a
	// frame.
	lengthFieldSize = 4
	// headerWordSize is the size of the header-length word (serialize type
	// in the top byte, header length in the low 24 bits).
	headerWordSize = 4
	// maxHeaderLen is the largest header length the 24-bit field can hold.
	maxHeaderLen = 1<<24 - 1
)

// EncodeFrame encodes c as a complete frame, including the leading 4-byte
// total length, with the header in c.Serialize's encoding.
func EncodeFrame(c *Command) ([]byte, error) {
	return AppendFrame(make([]byte, 0, frameSizeHint(c)), c)
}

// AppendFrame appends the complete frame for c to dst and returns the
// extended slice. On error dst is returned unchanged (same length).
func AppendFrame(dst []byte, c *Command) ([]byte, error) {
	if c.Ext == nil {
		return appendFrame(dst, c, nil)
	}
	e := extEncoders.Get().(*ExtEncoder)
	dst, err := appendFrame(dst, c, e)
	*e = ExtEncoder{}
	extEncoders.Put(e)
	return dst, err
}

// extEncoders pools the ExtEncoders of AppendFrame (an encoder handed to an
// interface method escapes, so a local one would be allocated per frame).
var extEncoders = sync.Pool{New: func() any { return new(ExtEncoder) }}

// appendFrame is AppendFrame with the encoder for c.Ext (nil when c.Ext is
// nil), which the caller reuses.
func appendFrame(dst []byte, c *Command, e *ExtEncoder) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length field and header word, patched below
	var err error
	switch c.Serialize {
	case SerializeJSON:
		dst = appendJSONHeaderTo(dst, c, e)
	case SerializeRocketMQ:
		dst, err = appendBinaryHeaderTo(dst, c, e)
	default:
		err = fmt.Errorf("remoting encode code %d: serialize type %d: %w", c.Code, byte(c.Serialize), ErrMalformed)
	}
	if err != nil {
		return dst[:start], err
	}
	h := len(dst) - start - lengthFieldSize - headerWordSize
	if h > maxHeaderLen {
		return dst[:start], fmt.Errorf("remoting encode code %d: header %d bytes exceeds %d: %w",
			c.Code, h, maxHeaderLen, ErrFrameTooLarge)
	}
	total := headerWordSize + h + len(c.Body)
	if total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("remoting encode code %d: frame %d bytes: %w", c.Code, total, ErrFrameTooLarge)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+lengthFieldSize:], uint32(c.Serialize)<<24|uint32(h))
	return append(dst, c.Body...), nil
}

// frameSizeHint estimates the encoded size of c so that EncodeFrame
// allocates once in the common case.
func frameSizeHint(c *Command) int {
	n := lengthFieldSize + headerWordSize + 128 + len(c.Language) + len(c.Remark) + len(c.Body)
	for k, v := range c.ExtFields {
		n += len(k) + len(v) + 8
	}
	if c.Ext != nil {
		n += 256
	}
	return n
}

// DecodeFrame decodes one frame. frame is everything AFTER the 4-byte total
// length: the header-length word, the header and the body. The body is
// copied, so the caller may reuse frame. It checks that the header length
// fits, that the serialize type is 0 or 1 and that the header parses, and
// sets Serialize to the type the frame used.
func DecodeFrame(frame []byte) (*Command, error) {
	return decodeFrame(frame, false)
}

// decodeFrame is DecodeFrame; with owned set, the body aliases frame instead
// of being copied (for callers that allocated frame for this command).
func decodeFrame(frame []byte, owned bool) (*Command, error) {
	if len(frame) < headerWordSize {
		return nil, fmt.Errorf("remoting decode: frame of %d bytes has no header-length word: %w", len(frame), ErrMalformed)
	}
	word := binary.BigEndian.Uint32(frame)
	st := SerializeType(word >> 24)
	h := int(word & maxHeaderLen)
	if h > len(frame)-headerWordSize {
		return nil, fmt.Errorf("remoting decode: header length %d exceeds frame remainder %d: %w",
			h, len(frame)-headerWordSize, ErrMalformed)
	}
	header := frame[headerWordSize : headerWordSize+h]
	var (
		c   *Command
		err error
	)
	switch st {
	case SerializeJSON:
		c, err = decodeJSONHeader(header)
	case SerializeRocketMQ:
		c, err = decodeBinaryHeader(header)
	default:
		return nil, fmt.Errorf("remoting decode: serialize type %d: %w", byte(st), ErrMalformed)
	}
	if err != nil {
		return nil, err
	}
	c.Serialize = st
	if body := frame[headerWordSize+h:]; len(body) > 0 {
		if owned {
			c.Body = body
		} else {
			c.Body = append([]byte(nil), body...)
		}
	}
	return c, nil
}

// decodeFrameInto decodes a frame whose header is in the binary encoding
// into c (see decodeBinaryHeaderInto); the body aliases frame.
func decodeFrameInto(c *Command, frame []byte) error {
	word := binary.BigEndian.Uint32(frame)
	h := int(word & maxHeaderLen)
	if h > len(frame)-headerWordSize {
		return fmt.Errorf("remoting decode: header length %d exceeds frame remainder %d: %w",
			h, len(frame)-headerWordSize, ErrMalformed)
	}
	if err := decodeBinaryHeaderInto(c, frame[headerWordSize:headerWordSize+h]); err != nil {
		return err
	}
	c.Serialize = SerializeRocketMQ
	if body := frame[headerWordSize+h:]; len(body) > 0 {
		c.Body = body
	}
	return nil
}

// ReadFrame reads and decodes one frame from r, for blocking clients.
// maxFrame bounds the total length L; zero or less means DefaultMaxFrame.
// A clean end of stream before the first byte returns an error that
// wraps io.EOF; a stream cut inside a frame wraps io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxFrame int) (*Command, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	var lenBuf [lengthFieldSize]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("remoting read frame length: %w", err)
	}
	n := int64(int32(binary.BigEndian.Uint32(lenBuf[:])))
	if n < headerWordSize {
		return nil, fmt.Errorf("remoting read frame: length %d: %w", n, ErrMalformed)
	}
	if n > int64(maxFrame) {
		return nil, fmt.Errorf("remoting read frame: length %d exceeds %d: %w", n, maxFrame, ErrFrameTooLarge)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("remoting read frame body of %d bytes: %w", n, err)
	}
	return decodeFrame(buf, true)
}
