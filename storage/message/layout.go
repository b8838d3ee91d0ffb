package message

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Layout locates the fields of one encoded record whose position depends on
// host sizes and on the body, topic and properties lengths. ParseLayout
// computes it with full bounds checks; its accessors then slice the same
// buffer without further checks.
type Layout struct {
	// Size is TOTALSIZE.
	Size int
	// Magic is MAGICCODE.
	Magic uint32
	// SysFlag is SYSFLAG.
	SysFlag int32
	// BornHostLen is HostV4Size or HostV6Size.
	BornHostLen int
	// StoreTimestampOff is the offset of STORETIMESTAMP.
	StoreTimestampOff int
	// StoreHostOff is the offset of STOREHOST.
	StoreHostOff int
	// StoreHostLen is HostV4Size or HostV6Size.
	StoreHostLen int
	// ReconsumeTimesOff is the offset of RECONSUMETIMES; PREPARED TX OFFSET follows it.
	ReconsumeTimesOff int
	// BodyOff and BodyLen locate BODY.
	BodyOff, BodyLen int
	// TopicOff and TopicLen locate TOPIC.
	TopicOff, TopicLen int
	// PropsOff and PropsLen locate PROPERTIES.
	PropsOff, PropsLen int
}

// Body returns the body bytes of the record b was parsed from (aliasing b).
func (l *Layout) Body(b []byte) []byte {
	return b[l.BodyOff : l.BodyOff+l.BodyLen : l.BodyOff+l.BodyLen]
}

// Topic returns the topic bytes of the record b was parsed from (aliasing b).
func (l *Layout) Topic(b []byte) []byte {
	return b[l.TopicOff : l.TopicOff+l.TopicLen : l.TopicOff+l.TopicLen]
}

// Properties returns the raw properties of the record b was parsed from
// (aliasing b).
func (l *Layout) Properties(b []byte) []byte {
	return b[l.PropsOff : l.PropsOff+l.PropsLen : l.PropsOff+l.PropsLen]
}

// BornHost returns BORNHOST of the record b was checked from (Check; an
// unchecked port reads as 0).
func (l *Layout) BornHost(b []byte) netip.AddrPort {
	h, _ := readHost(b[OffBornHost : OffBornHost+l.BornHostLen])
	return h
}

// StoreHost returns STOREHOST (see BornHost).
func (l *Layout) StoreHost(b []byte) netip.AddrPort {
	h, _ := readHost(b[l.StoreHostOff : l.StoreHostOff+l.StoreHostLen])
	return h
}

// ReconsumeTimes returns RECONSUMETIMES.
func (l *Layout) ReconsumeTimes(b []byte) int32 {
	return int32(binary.BigEndian.Uint32(b[l.ReconsumeTimesOff:]))
}

// PreparedTransactionOffset returns PREPARED TRANSACTION OFFSET.
func (l *Layout) PreparedTransactionOffset(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b[l.ReconsumeTimesOff+4:]))
}

// hostLen returns the host size selected by bit in sysFlag.
func hostLen(sysFlag, bit int32) int {
	if sysFlag&bit != 0 {
		return HostV6Size
	}
	return HostV4Size
}

// ParseLayout validates the framing of the record at the start of b and
// returns the positions of its fields. Errors: ErrTruncated if b is shorter
// than the header or than TOTALSIZE; ErrBlank (with Size set) for a blank
// record; ErrCorrupt for an unknown magic or lengths that do not add up to
// TOTALSIZE.
func ParseLayout(b []byte) (Layout, error) {
	be := binary.BigEndian
	if len(b) < BlankSize {
		return Layout{}, fmt.Errorf("message decode: %d bytes, need %d for the header: %w", len(b), BlankSize, ErrTruncated)
	}
	size := int(int32(be.Uint32(b[OffTotalSize:])))
	l := Layout{Size: size, Magic: be.Uint32(b[OffMagic:])}
	switch l.Magic {
	case MagicBlank:
		if size < BlankSize {
			return Layout{}, fmt.Errorf("message decode: blank record size %d: %w", size, ErrCorrupt)
		}
		return l, ErrBlank
	case MagicV1, MagicV2:
	default:
		return Layout{}, fmt.Errorf("message decode: magic %#08x: %w", l.Magic, ErrCorrupt)
	}
	if size < MinRecordSize {
		return Layout{}, fmt.Errorf("message decode: total size %d below minimum %d: %w", size, MinRecordSize, ErrCorrupt)
	}
	if len(b) < size {
		return Layout{}, fmt.Errorf("message decode: %d bytes, record needs %d: %w", len(b), size, ErrTruncated)
	}
	rec := b[:size]
	l.SysFlag = int32(be.Uint32(rec[OffSysFlag:]))
	l.BornHostLen = hostLen(l.SysFlag, SysFlagBornHostV6)
	l.StoreHostLen = hostLen(l.SysFlag, SysFlagStoreHostV6)
	l.StoreTimestampOff = OffBornHost + l.BornHostLen
	l.StoreHostOff = l.StoreTimestampOff + 8
	l.ReconsumeTimesOff = l.StoreHostOff + l.StoreHostLen
	pos := l.ReconsumeTimesOff + 4 + 8
	// The fixed part (up to BODYLEN) fits: MinRecordSize covers it for IPv4
	// hosts, IPv6 hosts are checked here.
	if pos+4 > size {
		return Layout{}, fmt.Errorf("message decode: total size %d too small for its hosts: %w", size, ErrCorrupt)
	}
	bodyLen := int(int32(be.Uint32(rec[pos:])))
	pos += 4
	if bodyLen < 0 || bodyLen > size-pos {
		return Layout{}, fmt.Errorf("message decode: body length %d exceeds record of %d: %w", bodyLen, size, ErrCorrupt)
	}
	l.BodyOff, l.BodyLen = pos, bodyLen
	pos += bodyLen
	topicLenSize := 1
	if l.Magic == MagicV2 {
		topicLenSize = 2
	}
	if pos+topicLenSize > size {
		return Layout{}, fmt.Errorf("message decode: topic length beyond record of %d: %w", size, ErrCorrupt)
	}
	var topicLen int
	if topicLenSize == 1 {
		topicLen = int(rec[pos])
	} else {
		topicLen = int(be.Uint16(rec[pos:]))
	}
	pos += topicLenSize
	if topicLen > size-pos {
		return Layout{}, fmt.Errorf("message decode: topic length %d exceeds record of %d: %w", topicLen, size, ErrCorrupt)
	}
	l.TopicOff, l.TopicLen = pos, topicLen
	pos += topicLen
	if pos+2 > size {
		return Layout{}, fmt.Errorf("message decode: properties length beyond record of %d: %w", size, ErrCorrupt)
	}
	propsLen := int(int16(be.Uint16(rec[pos:])))
	pos += 2
	if propsLen < 0 || propsLen != size-pos {
		return Layout{}, fmt.Errorf("message decode: properties length %d, %d bytes left in record: %w", propsLen, size-pos, ErrCorrupt)
	}
	l.PropsOff, l.PropsLen = pos, propsLen
	return l, nil
}

// The Peek functions read one fixed-position field of an encoded record
// without decoding it. b must start with a record that passed ParseLayout or
// Decode (or that this package encoded); they panic if b is too short.

// PeekTotalSize returns TOTALSIZE.
func PeekTotalSize(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[OffTotalSize:])) }

// PeekMagic returns MAGICCODE.
func PeekMagic(b []byte) uint32 { return binary.BigEndian.Uint32(b[OffMagic:]) }

// PeekBodyCRC returns BODYCRC.
func PeekBodyCRC(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[OffBodyCRC:])) }

// PeekQueueID returns QUEUEID.
func PeekQueueID(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[OffQueueID:])) }

// PeekFlag returns FLAG.
func PeekFlag(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[OffFlag:])) }

// PeekQueueOffset returns QUEUEOFFSET.
func PeekQueueOffset(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[OffQueueOffset:])) }

// PeekPhysicalOffset returns PHYSICALOFFSET.
func PeekPhysicalOffset(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b[OffPhysicalOffset:]))
}

// PeekSysFlag returns SYSFLAG.
func PeekSysFlag(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[OffSysFlag:])) }

// PeekBornTimestamp returns BORNTIMESTAMP.
func PeekBornTimestamp(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[OffBornTimestamp:])) }

// PeekStoreTimestamp returns STORETIMESTAMP (its offset depends on SYSFLAG).
func PeekStoreTimestamp(b []byte) int64 {
	off := OffBornHost + hostLen(PeekSysFlag(b), SysFlagBornHostV6)
	return int64(binary.BigEndian.Uint64(b[off:]))
}

// PeekTopic returns TOPIC, validating the record framing first.
func PeekTopic(b []byte) (string, error) {
	l, err := ParseLayout(b)
	if err != nil {
		return "", err
	}
	return string(l.Topic(b)), nil
}

// PeekBody returns BODY (aliasing b), validating the record framing first.
func PeekBody(b []byte) ([]byte, error) {
	l, err := ParseLayout(b)
	if err != nil {
		return nil, err
	}
	return l.Body(b), nil
}

// PeekProperties returns PROPERTIES (aliasing b), validating the record
// framing first.
func PeekProperties(b []byte) ([]byte, error) {
	l, err := ParseLayout(b)
	if err != nil {
		return nil, err
	}
	return l.Properties(b), nil
}

// SetQueueOffset overwrites QUEUEOFFSET of the encoded record at the start of b.
func SetQueueOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[OffQueueOffset:], uint64(off)) }

// SetPhysicalOffset overwrites PHYSICALOFFSET of the encoded record at the
// start of b.
func SetPhysicalOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[OffPhysicalOffset:], uint64(off))
}

// SetStoreTimestamp overwrites STORETIMESTAMP of the encoded record at the
// start of b (its offset depends on SYSFLAG).
func SetStoreTimestamp(b []byte, ms int64) {
	off := OffBornHost + hostLen(PeekSysFlag(b), SysFlagBornHostV6)
	binary.BigEndian.PutUint64(b[off:], uint64(ms))
}
