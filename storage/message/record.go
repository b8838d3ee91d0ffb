package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
)

// Magic codes of the record header (MAGICCODE field). Part of the wire format:
// never change them.
const (
	// MagicV1 marks a record with a 1-byte topic length (the only layout the
	// Go client can read, and the one this package writes).
	MagicV1 uint32 = 0xDAA320A7
	// MagicV2 marks a record with a 2-byte topic length (decode only).
	MagicV2 uint32 = 0xDAA320AB
	// MagicBlank marks the blank record padding the end of a CommitLog file.
	MagicBlank uint32 = 0xCBD43194
)

// Byte offsets of the fixed-position fields of a record. Fields after BORNHOST
// move with the host sizes; see Layout.
const (
	OffTotalSize      = 0
	OffMagic          = 4
	OffBodyCRC        = 8
	OffQueueID        = 12
	OffFlag           = 16
	OffQueueOffset    = 20
	OffPhysicalOffset = 28
	OffSysFlag        = 36
	OffBornTimestamp  = 40
	OffBornHost       = 48
)

// Sizes and limits of the record format.
const (
	// HostV4Size is the encoded size of an IPv4 host (address + int32 port).
	HostV4Size = 8
	// HostV6Size is the encoded size of an IPv6 host (address + int32 port).
	HostV6Size = 20
	// BlankSize is the minimal size of a blank record (TOTALSIZE + MAGICCODE).
	BlankSize = 8
	// MinRecordSize is the size of a V1 record with IPv4 hosts, an empty body,
	// topic and properties.
	MinRecordSize = 91
	// MaxTopicLenV1 is the longest topic (in bytes) a V1 record can carry.
	MaxTopicLenV1 = 127
	// MaxPropertiesLen is the longest properties string (in bytes).
	MaxPropertiesLen = math.MaxInt16
	// MaxRecordSize bounds TOTALSIZE (it is a positive int32).
	MaxRecordSize = math.MaxInt32
)

// Record is one stored message, as held in the CommitLog and returned to
// consumers. Properties are kept in their encoded form (see EncodeProperties).
type Record struct {
	// QueueID is the consume queue the message belongs to.
	QueueID int32
	// Flag is the user flag from the send request.
	Flag int32
	// QueueOffset is the logical offset of the message in its consume queue.
	QueueOffset int64
	// PhysicalOffset is the CommitLog offset of this record.
	PhysicalOffset int64
	// SysFlag holds SysFlag* bits. On encode the IPv6 bits are derived from
	// BornHost and StoreHost; the other bits are written as given.
	SysFlag int32
	// BornTimestamp is the producer's clock in ms since the epoch.
	BornTimestamp int64
	// BornHost is the producer's address. An IPv4-mapped IPv6 address is
	// written as IPv4; an invalid AddrPort is written as 0.0.0.0:0.
	BornHost netip.AddrPort
	// StoreTimestamp is the broker's clock in ms since the epoch.
	StoreTimestamp int64
	// StoreHost is the broker's address (same encoding rules as BornHost).
	StoreHost netip.AddrPort
	// ReconsumeTimes counts redeliveries.
	ReconsumeTimes int32
	// PreparedTransactionOffset is the prepared transaction offset.
	PreparedTransactionOffset int64
	// Body is the stored body (compressed if SysFlag says so).
	Body []byte
	// Topic is the topic name, 1 to 127 bytes when encoded.
	Topic string
	// Properties is the raw encoded properties string.
	Properties []byte
}

// hostSize returns the encoded size of a host and whether it is IPv6.
func hostSize(h netip.AddrPort) (int, bool) {
	if a := h.Addr(); a.Is6() && !a.Is4In6() {
		return HostV6Size, true
	}
	return HostV4Size, false
}

// EncodedSize returns the number of bytes AppendTo writes for r.
func (r *Record) EncodedSize() int {
	born, _ := hostSize(r.BornHost)
	store, _ := hostSize(r.StoreHost)
	return MinRecordSize - 2*HostV4Size + born + store + len(r.Body) + len(r.Topic) + len(r.Properties)
}

// Validate reports whether r can be encoded, wrapping ErrInvalid if not.
func (r *Record) Validate() error {
	switch {
	case len(r.Topic) == 0:
		return fmt.Errorf("message encode: empty topic: %w", ErrInvalid)
	case len(r.Topic) > MaxTopicLenV1:
		return fmt.Errorf("message encode: topic is %d bytes, max %d: %w", len(r.Topic), MaxTopicLenV1, ErrInvalid)
	case len(r.Properties) > MaxPropertiesLen:
		return fmt.Errorf("message encode: properties are %d bytes, max %d: %w", len(r.Properties), MaxPropertiesLen, ErrInvalid)
	case int64(r.EncodedSize()) > MaxRecordSize:
		return fmt.Errorf("message encode: record of %d bytes too large: %w", r.EncodedSize(), ErrInvalid)
	}
	return nil
}

// Encode validates r and appends its encoding to dst.
func (r *Record) Encode(dst []byte) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return dst, err
	}
	return r.AppendTo(dst), nil
}

// AppendTo appends the V1 encoding of r to dst and returns the extended
// slice. It computes BODYCRC and sets the IPv6 SYSFLAG bits from the host
// kinds. It panics if r.Validate fails: validate untrusted input first (or use
// Encode).
func (r *Record) AppendTo(dst []byte) []byte {
	if err := r.Validate(); err != nil {
		panic(err)
	}
	size := r.EncodedSize()
	sysFlag := r.SysFlag &^ (SysFlagBornHostV6 | SysFlagStoreHostV6)
	if _, v6 := hostSize(r.BornHost); v6 {
		sysFlag |= SysFlagBornHostV6
	}
	if _, v6 := hostSize(r.StoreHost); v6 {
		sysFlag |= SysFlagStoreHostV6
	}
	be := binary.BigEndian
	dst = be.AppendUint32(dst, uint32(size))
	dst = be.AppendUint32(dst, MagicV1)
	dst = be.AppendUint32(dst, uint32(BodyCRC(r.Body)))
	dst = be.AppendUint32(dst, uint32(r.QueueID))
	dst = be.AppendUint32(dst, uint32(r.Flag))
	dst = be.AppendUint64(dst, uint64(r.QueueOffset))
	dst = be.AppendUint64(dst, uint64(r.PhysicalOffset))
	dst = be.AppendUint32(dst, uint32(sysFlag))
	dst = be.AppendUint64(dst, uint64(r.BornTimestamp))
	dst = appendHost(dst, r.BornHost)
	dst = be.AppendUint64(dst, uint64(r.StoreTimestamp))
	dst = appendHost(dst, r.StoreHost)
	dst = be.AppendUint32(dst, uint32(r.ReconsumeTimes))
	dst = be.AppendUint64(dst, uint64(r.PreparedTransactionOffset))
	dst = be.AppendUint32(dst, uint32(len(r.Body)))
	dst = append(dst, r.Body...)
	dst = append(dst, byte(len(r.Topic)))
	dst = append(dst, r.Topic...)
	dst = be.AppendUint16(dst, uint16(len(r.Properties)))
	dst = append(dst, r.Properties...)
	return dst
}

// appendHost appends the address bytes and the int32 port of h.
func appendHost(dst []byte, h netip.AddrPort) []byte {
	a := h.Addr()
	switch {
	case !a.IsValid():
		dst = append(dst, 0, 0, 0, 0)
	case a.Is4() || a.Is4In6():
		b := a.Unmap().As4()
		dst = append(dst, b[:]...)
	default:
		b := a.As16()
		dst = append(dst, b[:]...)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(h.Port()))
}

// readHost decodes a host of len(b) bytes (HostV4Size or HostV6Size).
func readHost(b []byte) (netip.AddrPort, error) {
	n := len(b) - 4
	port := int32(binary.BigEndian.Uint32(b[n:]))
	if port < 0 || port > math.MaxUint16 {
		return netip.AddrPort{}, fmt.Errorf("message decode: port %d out of range: %w", port, ErrCorrupt)
	}
	var a netip.Addr
	if n == 4 {
		a = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		a = netip.AddrFrom16([16]byte(b[:16]))
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}

// BodyCRC returns RocketMQ's BODYCRC of body: CRC-32 (IEEE) masked to 31 bits.
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// Check validates the record at the start of b as Decode does (framing and
// hosts) without building a Record (no allocation), and returns its layout.
func Check(b []byte) (Layout, error) {
	l, err := ParseLayout(b)
	if err != nil {
		return l, err
	}
	if _, err := readHost(b[OffBornHost : OffBornHost+l.BornHostLen]); err != nil {
		return Layout{}, err
	}
	if _, err := readHost(b[l.StoreHostOff : l.StoreHostOff+l.StoreHostLen]); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// Decode decodes the record at the start of b and returns it with its size
// (TOTALSIZE). Body and Properties alias b. It validates the magic (V1 or V2),
// that every length stays inside TOTALSIZE and that the fields fill it
// exactly; it does not verify BODYCRC (see VerifyBodyCRC). For a blank record
// it returns ErrBlank and its TOTALSIZE, which may exceed len(b). When b ends
// before the record does it returns ErrTruncated.
func Decode(b []byte) (Record, int, error) {
	l, err := ParseLayout(b)
	if err != nil {
		return Record{}, l.Size, err
	}
	be := binary.BigEndian
	born, err := readHost(b[OffBornHost : OffBornHost+l.BornHostLen])
	if err != nil {
		return Record{}, 0, err
	}
	store, err := readHost(b[l.StoreHostOff : l.StoreHostOff+l.StoreHostLen])
	if err != nil {
		return Record{}, 0, err
	}
	r := Record{
		QueueID:                   int32(be.Uint32(b[OffQueueID:])),
		Flag:                      int32(be.Uint32(b[OffFlag:])),
		QueueOffset:               int64(be.Uint64(b[OffQueueOffset:])),
		PhysicalOffset:            int64(be.Uint64(b[OffPhysicalOffset:])),
		SysFlag:                   l.SysFlag,
		BornTimestamp:             int64(be.Uint64(b[OffBornTimestamp:])),
		BornHost:                  born,
		StoreTimestamp:            int64(be.Uint64(b[l.StoreTimestampOff:])),
		StoreHost:                 store,
		ReconsumeTimes:            int32(be.Uint32(b[l.ReconsumeTimesOff:])),
		PreparedTransactionOffset: int64(be.Uint64(b[l.ReconsumeTimesOff+4:])),
		Body:                      l.Body(b),
		Topic:                     string(l.Topic(b)),
		Properties:                l.Properties(b),
	}
	return r, l.Size, nil
}

// VerifyBodyCRC checks the BODYCRC of the record at the start of b, returning
// ErrBodyCRC (which is also ErrCorrupt) on mismatch, or a ParseLayout error.
func VerifyBodyCRC(b []byte) error {
	l, err := ParseLayout(b)
	if err != nil {
		return err
	}
	want := PeekBodyCRC(b)
	if got := BodyCRC(l.Body(b)); got != want {
		return fmt.Errorf("message: body crc %#08x, header says %#08x: %w", got, want, ErrBodyCRC)
	}
	return nil
}

// OffsetMsgID returns the record's offset message id (see OffsetMsgID).
func (r *Record) OffsetMsgID() string {
	return OffsetMsgID(r.StoreHost, r.PhysicalOffset)
}

// AppendBlank appends the 8-byte header of a blank record that covers size
// bytes (at least BlankSize): TOTALSIZE = size and MagicBlank. The caller owns
// the remaining size-8 bytes (typically the zeroed rest of a CommitLog file).
func AppendBlank(dst []byte, size int) []byte {
	if size < BlankSize || int64(size) > MaxRecordSize {
		panic(fmt.Sprintf("message: blank record of %d bytes out of range", size))
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	return binary.BigEndian.AppendUint32(dst, MagicBlank)
}
