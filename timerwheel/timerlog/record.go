package timerlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// These constants are part of the on-disk format and must not be changed.
// To change the layout, add a new Version, keep decoding the old one, and
// follow the migration notes in docs/timer-formats.md.
const (
	// RecordSize is the size of one encoded record (the wal payload).
	RecordSize = 88
	// EntrySize is the size of one tidwall/wal binary entry holding a
	// record: the one-byte uvarint length (0x58) plus the record.
	EntrySize = RecordSize + 1
	// Version is the record format version written by this package.
	Version = 1
)

// Byte offsets of the record fields (see the package documentation).
const (
	offCRC       = 0
	offLen       = 4
	offVersion   = 6
	offKind      = 7
	offFlags     = 8
	offReserved  = 9
	offSize      = 12
	offSeq       = 16
	offPrev      = 24
	offSlot      = 32
	offDeliverMs = 40
	offEffMs     = 48
	offAddedMs   = 56
	offCLOffset  = 64
	offCQOffset  = 72
	offKeyHash   = 80
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Kind is the type of a TimerLog record.
type Kind uint8

const (
	// KindNormal is a timer to deliver.
	KindNormal Kind = 1
	// KindCancel suppresses normal timers with the same key hash.
	KindCancel Kind = 2
	// KindRelinkMark records that the newest records of a far bucket were
	// copied towards the near wheel: the bucket now starts at Prev and holds
	// Size normal and CQOffset cancel records. Prev 0 empties the bucket and
	// advances the relink boundary past it.
	KindRelinkMark Kind = 3
	// KindMoveMark empties a far bucket whose records are re-appended
	// (compaction) by the records that follow it in the same group.
	KindMoveMark Kind = 4
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindNormal:
		return "normal"
	case KindCancel:
		return "cancel"
	case KindRelinkMark:
		return "relink-mark"
	case KindMoveMark:
		return "move-mark"
	default:
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
}

// IsMark reports whether the kind is a slot-update mark rather than a timer.
func (k Kind) IsMark() bool { return k == KindRelinkMark || k == KindMoveMark }

// Flags are per-record bits.
type Flags uint8

const (
	// FlagCommit ends an atomic group of records. Recovery truncates every
	// record after the last record carrying it.
	FlagCommit Flags = 1 << 0
	// FlagFar places the record (or the mark's slot) in the far wheel;
	// without it the slot is a near-wheel slot.
	FlagFar Flags = 1 << 1
	// FlagCopy marks a copy of an earlier record (relink or compaction).
	FlagCopy Flags = 1 << 2
	// FlagRolled marks a record parked in the last far bucket because its
	// time lay beyond the far wheel's span.
	FlagRolled Flags = 1 << 3

	flagsKnown = FlagCommit | FlagFar | FlagCopy | FlagRolled
)

// Record is one decoded TimerLog record. For marks, Prev is the bucket's new
// head, Size its remaining normal count and CQOffset its remaining cancel
// count (see Mark and MarkState).
type Record struct {
	// Seq is the record's wal index: unique, strictly increasing, never 0.
	Seq uint64
	// Prev is the Seq of the previous record in the same slot (0: first).
	Prev uint64
	// Slot is the absolute slot number: EffMs/SlotMs in the near wheel,
	// EffMs/FarSlotMs (or the roll bucket) in the far wheel.
	Slot int64
	// Kind is the record type.
	Kind Kind
	// Flags are the record's flag bits.
	Flags Flags
	// DeliverMs is the requested delivery time (epoch ms).
	DeliverMs int64
	// EffMs is the time the record is ordered and released by: DeliverMs,
	// raised to the dequeue position when the timer arrived already due,
	// and lowered by the cancel window for cancels.
	EffMs int64
	// AddedMs is the time the timer was first added (TIMER_ENQUEUE_MS).
	AddedMs int64
	// CLOffset is the CommitLog offset of the timer message.
	CLOffset int64
	// CQOffset is the message's offset in the rmq_sys_wheel_timer queue.
	CQOffset int64
	// KeyHash is the hash of "<realTopic>+<uniqKey>" (0: not cancellable).
	KeyHash uint64
	// Size is the message's CommitLog record size.
	Size int32
}

// Mark builds a slot-update mark for slot (far when far is set) that leaves
// the slot with head, n normal and nc cancel records.
func Mark(kind Kind, far bool, slot int64, head uint64, n, nc uint32) Record {
	r := Record{Kind: kind, Slot: slot, Prev: head, Size: int32(n), CQOffset: int64(nc)}
	if far {
		r.Flags |= FlagFar
	}
	return r
}

// MarkState returns the slot state a mark leaves: head, normal and cancel
// counts.
func (r Record) MarkState() (head uint64, n, nc uint32) {
	return r.Prev, uint32(r.Size), uint32(r.CQOffset)
}

// Far reports whether the record lives in the far wheel.
func (r Record) Far() bool { return r.Flags&FlagFar != 0 }

// Encode writes r into b[:RecordSize], which must be large enough.
func (r *Record) Encode(b []byte) {
	b = b[:RecordSize]
	be := binary.BigEndian
	be.PutUint16(b[offLen:], RecordSize)
	b[offVersion] = Version
	b[offKind] = byte(r.Kind)
	b[offFlags] = byte(r.Flags)
	b[offReserved], b[offReserved+1], b[offReserved+2] = 0, 0, 0
	be.PutUint32(b[offSize:], uint32(r.Size))
	be.PutUint64(b[offSeq:], r.Seq)
	be.PutUint64(b[offPrev:], r.Prev)
	be.PutUint64(b[offSlot:], uint64(r.Slot))
	be.PutUint64(b[offDeliverMs:], uint64(r.DeliverMs))
	be.PutUint64(b[offEffMs:], uint64(r.EffMs))
	be.PutUint64(b[offAddedMs:], uint64(r.AddedMs))
	be.PutUint64(b[offCLOffset:], uint64(r.CLOffset))
	be.PutUint64(b[offCQOffset:], uint64(r.CQOffset))
	be.PutUint64(b[offKeyHash:], r.KeyHash)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offLen:], castagnoli))
}

// AppendEncode appends the encoding of r to dst.
func (r *Record) AppendEncode(dst []byte) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, RecordSize)...)
	r.Encode(dst[n:])
	return dst
}

// Decode parses one record. It fails with an error wrapping ErrCorrupt when
// the length, checksum, version, kind or flags are not valid; it never
// panics on any input.
func Decode(b []byte) (Record, error) {
	if len(b) != RecordSize {
		return Record{}, fmt.Errorf("timerlog record: %d bytes, want %d: %w", len(b), RecordSize, ErrCorrupt)
	}
	be := binary.BigEndian
	if n := be.Uint16(b[offLen:]); n != RecordSize {
		return Record{}, fmt.Errorf("timerlog record: length field %d: %w", n, ErrCorrupt)
	}
	if got, want := crc32.Checksum(b[offLen:], castagnoli), be.Uint32(b[offCRC:]); got != want {
		return Record{}, fmt.Errorf("timerlog record: crc %08x, stored %08x: %w", got, want, ErrCorrupt)
	}
	if v := b[offVersion]; v != Version {
		return Record{}, fmt.Errorf("timerlog record: version %d: %w", v, ErrCorrupt)
	}
	r := Record{
		Kind:      Kind(b[offKind]),
		Flags:     Flags(b[offFlags]),
		Size:      int32(be.Uint32(b[offSize:])),
		Seq:       be.Uint64(b[offSeq:]),
		Prev:      be.Uint64(b[offPrev:]),
		Slot:      int64(be.Uint64(b[offSlot:])),
		DeliverMs: int64(be.Uint64(b[offDeliverMs:])),
		EffMs:     int64(be.Uint64(b[offEffMs:])),
		AddedMs:   int64(be.Uint64(b[offAddedMs:])),
		CLOffset:  int64(be.Uint64(b[offCLOffset:])),
		CQOffset:  int64(be.Uint64(b[offCQOffset:])),
		KeyHash:   be.Uint64(b[offKeyHash:]),
	}
	if r.Kind < KindNormal || r.Kind > KindMoveMark {
		return Record{}, fmt.Errorf("timerlog record %d: kind %d: %w", r.Seq, r.Kind, ErrCorrupt)
	}
	if r.Flags&^flagsKnown != 0 {
		return Record{}, fmt.Errorf("timerlog record %d: flags %#x: %w", r.Seq, r.Flags, ErrCorrupt)
	}
	if b[offReserved]|b[offReserved+1]|b[offReserved+2] != 0 {
		return Record{}, fmt.Errorf("timerlog record %d: reserved bytes set: %w", r.Seq, ErrCorrupt)
	}
	if r.Seq == 0 || r.Prev >= r.Seq {
		return Record{}, fmt.Errorf("timerlog record %d: prev %d: %w", r.Seq, r.Prev, ErrCorrupt)
	}
	return r, nil
}
