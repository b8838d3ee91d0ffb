package ha

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Type is a frame's TYPE byte.
type Type uint8

// Frame types (part of the wire format).
const (
	TypeHandshake      Type = 1 // replica -> master, first frame
	TypeHandshakeReply Type = 2 // master -> replica, answer to the handshake
	TypeTransfer       Type = 3 // master -> replica, CommitLog bytes or heartbeat
	TypeAck            Type = 4 // replica -> master, durable end
)

// Wire constants.
const (
	// Magic opens every handshake ("WHAS").
	Magic uint32 = 0x57484153
	// Version is the stream version this code speaks: 2 opens every
	// connection with the secret's challenge (auth.go) and has no token
	// in the handshake; a version 1 peer is refused.
	Version uint16 = 2
	// MaxFrameSize bounds LEN; a larger value is a protocol error.
	MaxFrameSize = 16 << 20
	// MaxTokenSize bounds a string on the wire (a refusal reason).
	MaxTokenSize = 1024
	// MaxEpochs bounds an epoch list on the wire.
	MaxEpochs = 1 << 16

	frameOverhead = 4 + 1 + 4 // LEN, TYPE, CRC32C
	transferHead  = 32        // offset, epoch, epochStart, confirmed
)

// ErrFrame means bytes on the stream do not form a valid frame.
var ErrFrame = errors.New("ha: malformed frame")

// Frame is one of Handshake, HandshakeReply, Transfer and Ack.
type Frame interface {
	// Type is the frame's TYPE byte.
	Type() Type
	appendPayload(dst []byte) []byte
}

// Handshake is the replica's first frame, sent once the master proved
// the secret (auth.go), with the replica's own proof.
type Handshake struct {
	// Version is the stream version the replica speaks.
	Version uint16
	// ReplicaID is the replica's persistent id (>= 1).
	ReplicaID int64
	// Epoch is the highest master epoch the replica knows.
	Epoch int64
	// MaxOffset is the replica's CommitLog end.
	MaxOffset int64
	// Epochs is the replica's epoch list.
	Epochs []Epoch
}

// HandshakeReply is the master's answer to a Handshake.
type HandshakeReply struct {
	// OK says the master accepted the replica; when false Reason says why
	// and the master closes the connection.
	OK bool
	// Reason explains a refusal.
	Reason string
	// MasterEpoch is the master's current epoch.
	MasterEpoch int64
	// MaxOffset is the master's CommitLog end.
	MaxOffset int64
	// Epochs is the master's epoch list.
	Epochs []Epoch
}

// Transfer carries CommitLog bytes from Offset (whole entries inside one
// segment, as commitlog.ReadRaw returns them), all written in Epoch, which
// started at EpochStart. Confirmed is the master's confirmed offset. An
// empty Body is a heartbeat.
type Transfer struct {
	Offset     int64
	Epoch      int64
	EpochStart int64
	Confirmed  int64
	Body       []byte
}

// Ack reports a replica's durable CommitLog end in Epoch.
type Ack struct {
	ReplicaID int64
	Epoch     int64
	MaxOffset int64
}

// Type implements Frame.
func (Handshake) Type() Type { return TypeHandshake }

// Type implements Frame.
func (HandshakeReply) Type() Type { return TypeHandshakeReply }

// Type implements Frame.
func (Transfer) Type() Type { return TypeTransfer }

// Type implements Frame.
func (Ack) Type() Type { return TypeAck }

func (h Handshake) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, Magic)
	b = binary.BigEndian.AppendUint16(b, h.Version)
	b = binary.BigEndian.AppendUint64(b, uint64(h.ReplicaID))
	b = binary.BigEndian.AppendUint64(b, uint64(h.Epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(h.MaxOffset))
	return appendEpochs(b, h.Epochs)
}

func (r HandshakeReply) appendPayload(b []byte) []byte {
	ok := byte(0)
	if r.OK {
		ok = 1
	}
	b = append(b, ok)
	b = appendString(b, r.Reason)
	b = binary.BigEndian.AppendUint64(b, uint64(r.MasterEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(r.MaxOffset))
	return appendEpochs(b, r.Epochs)
}

func (t Transfer) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t.Offset))
	b = binary.BigEndian.AppendUint64(b, uint64(t.Epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(t.EpochStart))
	b = binary.BigEndian.AppendUint64(b, uint64(t.Confirmed))
	return append(b, t.Body...)
}

func (a Ack) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(a.ReplicaID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.Epoch))
	return binary.BigEndian.AppendUint64(b, uint64(a.MaxOffset))
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendEpochs(b []byte, es []Epoch) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(es)))
	for _, e := range es {
		b = binary.BigEndian.AppendUint64(b, uint64(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.Start))
	}
	return b
}

// AppendFrame appends f's whole frame (LEN, TYPE, payload, CRC32C) to dst.
func AppendFrame(dst []byte, f Frame) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(f.Type()))
	dst = f.appendPayload(dst)
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start+4:], castagnoli))
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// Decode parses one whole frame (as AppendFrame wrote it); b must hold
// exactly one frame. A Transfer's Body aliases b.
func Decode(b []byte) (Frame, error) {
	if len(b) < frameOverhead {
		return nil, fmt.Errorf("%d bytes: %w", len(b), ErrFrame)
	}
	n := binary.BigEndian.Uint32(b)
	if int64(n) != int64(len(b)-4) || n > MaxFrameSize {
		return nil, fmt.Errorf("length %d for %d bytes: %w", n, len(b), ErrFrame)
	}
	return decodeBody(b[4:])
}

// decodeBody parses TYPE, payload and CRC32C.
func decodeBody(b []byte) (Frame, error) {
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("checksum: %w", ErrFrame)
	}
	d := decoder{b: body[1:]}
	var f Frame
	switch Type(body[0]) {
	case TypeHandshake:
		var h Handshake
		if d.u32() != Magic {
			return nil, fmt.Errorf("handshake magic: %w", ErrFrame)
		}
		h.Version = d.u16()
		h.ReplicaID, h.Epoch, h.MaxOffset = d.i64(), d.i64(), d.i64()
		h.Epochs = d.epochs()
		f = h
	case TypeHandshakeReply:
		var r HandshakeReply
		switch d.u8() {
		case 0:
		case 1:
			r.OK = true
		default:
			d.fail()
		}
		r.Reason = d.str()
		r.MasterEpoch, r.MaxOffset = d.i64(), d.i64()
		r.Epochs = d.epochs()
		f = r
	case TypeTransfer:
		var t Transfer
		t.Offset, t.Epoch, t.EpochStart, t.Confirmed = d.i64(), d.i64(), d.i64(), d.i64()
		if !d.bad {
			t.Body, d.b = d.b, nil
			if len(t.Body) == 0 {
				t.Body = nil
			}
		}
		f = t
	case TypeAck:
		f = Ack{ReplicaID: d.i64(), Epoch: d.i64(), MaxOffset: d.i64()}
	default:
		return nil, fmt.Errorf("type %d: %w", body[0], ErrFrame)
	}
	if d.bad || len(d.b) != 0 {
		return nil, fmt.Errorf("type %d payload: %w", body[0], ErrFrame)
	}
	return f, nil
}

// decoder reads big-endian fields; a short read marks it bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) fail() { d.bad, d.b = true, nil }

func (d *decoder) take(n int) []byte {
	if d.bad || len(d.b) < n {
		d.fail()
		return make([]byte, n)
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() uint8   { return d.take(1)[0] }
func (d *decoder) u16() uint16 { return binary.BigEndian.Uint16(d.take(2)) }
func (d *decoder) u32() uint32 { return binary.BigEndian.Uint32(d.take(4)) }
func (d *decoder) i64() int64  { return int64(binary.BigEndian.Uint64(d.take(8))) }

func (d *decoder) str() string {
	n := int(d.u16())
	if n > MaxTokenSize {
		d.fail()
		return ""
	}
	return string(d.take(n))
}

func (d *decoder) epochs() []Epoch {
	n := d.u32()
	if d.bad || n > MaxEpochs || int(n)*16 > len(d.b) {
		d.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]Epoch, n)
	for i := range out {
		out[i] = Epoch{Epoch: d.i64(), Start: d.i64()}
	}
	return out
}

// Reader reads frames from a stream.
type Reader struct {
	r   *bufio.Reader
	buf []byte
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// Next reads and decodes the next frame. A Transfer's Body is valid until
// the next call. io.EOF means the stream ended between frames.
func (r *Reader) Next() (Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < frameOverhead-4 || n > MaxFrameSize {
		return nil, fmt.Errorf("length %d: %w", n, ErrFrame)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("ha frame body: %w", err)
	}
	return decodeBody(b)
}

// Buffered returns how many bytes of later frames are already read from
// the stream: a receiver that finds none has drained a burst (the moment to
// fsync once and acknowledge).
func (r *Reader) Buffered() int { return r.r.Buffered() }
