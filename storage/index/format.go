package index

import (
	"encoding/binary"
	"hash/crc32"
)

// On-disk format constants (see the package documentation). They are part
// of the format and must not change; a new layout gets a new version, and
// Open must keep reading the previous one.
const (
	magic          uint32 = 0x574D4958 // "WMIX"
	formatVersion  uint16 = 1
	headerSize            = 64
	headerCopies          = 2
	headerRegion          = headerSize * headerCopies // slot table starts here
	slotSize              = 4
	entrySize             = 32
	flagSealed     uint16 = 1
	entryCRCOffset        = 28
	headerCRCOff          = 56
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is one copy of a file's header.
type header struct {
	flags      uint16
	generation uint64 // the valid copy with the larger generation wins
	slots      uint32
	maxEntries uint32
	entries    uint32 // entry count; authoritative in a sealed file
	position   int64  // CommitLog offset below which every record is indexed
	minTS      int64  // smallest store timestamp of an entry (entries > 0)
	maxTS      int64  // largest store timestamp of an entry
}

func (h *header) sealed() bool { return h.flags&flagSealed != 0 }

// encode writes h into b (headerSize bytes) with its checksum.
func (h *header) encode(b []byte) {
	be := binary.BigEndian
	clear(b[:headerSize])
	be.PutUint32(b[0:], magic)
	be.PutUint16(b[4:], formatVersion)
	be.PutUint16(b[6:], h.flags)
	be.PutUint64(b[8:], h.generation)
	be.PutUint32(b[16:], h.slots)
	be.PutUint32(b[20:], h.maxEntries)
	be.PutUint32(b[24:], h.entries)
	be.PutUint64(b[32:], uint64(h.position))
	be.PutUint64(b[40:], uint64(h.minTS))
	be.PutUint64(b[48:], uint64(h.maxTS))
	be.PutUint32(b[headerCRCOff:], crc32.Checksum(b[:headerCRCOff], castagnoli))
}

// decodeHeader parses one header copy; ok is false for a torn, zeroed or
// foreign copy.
func decodeHeader(b []byte) (h header, ok bool) {
	be := binary.BigEndian
	if len(b) < headerSize || be.Uint32(b[0:]) != magic || be.Uint16(b[4:]) != formatVersion ||
		be.Uint32(b[headerCRCOff:]) != crc32.Checksum(b[:headerCRCOff], castagnoli) {
		return header{}, false
	}
	h = header{
		flags:      be.Uint16(b[6:]),
		generation: be.Uint64(b[8:]),
		slots:      be.Uint32(b[16:]),
		maxEntries: be.Uint32(b[20:]),
		entries:    be.Uint32(b[24:]),
		position:   int64(be.Uint64(b[32:])),
		minTS:      int64(be.Uint64(b[40:])),
		maxTS:      int64(be.Uint64(b[48:])),
	}
	if h.slots == 0 || h.maxEntries == 0 || h.entries > h.maxEntries || h.position < 0 {
		return header{}, false
	}
	return h, true
}

// entry is one indexed key occurrence.
type entry struct {
	hash   uint64 // keyHash of "<topic>#<key>"
	offset int64  // CommitLog offset of the record
	ts     int64  // the record's store timestamp (ms)
	prev   uint32 // number of the previous entry of the same slot, 0 = none
}

func (e *entry) encode(b []byte) {
	be := binary.BigEndian
	be.PutUint64(b[0:], e.hash)
	be.PutUint64(b[8:], uint64(e.offset))
	be.PutUint64(b[16:], uint64(e.ts))
	be.PutUint32(b[24:], e.prev)
	be.PutUint32(b[entryCRCOffset:], crc32.Checksum(b[:entryCRCOffset], castagnoli))
}

// decodeEntry parses one entry; ok is false when its checksum fails (a torn
// or zeroed tail, or bit rot).
func decodeEntry(b []byte) (e entry, ok bool) {
	be := binary.BigEndian
	if be.Uint32(b[entryCRCOffset:]) != crc32.Checksum(b[:entryCRCOffset], castagnoli) {
		return entry{}, false
	}
	return entry{
		hash:   be.Uint64(b[0:]),
		offset: int64(be.Uint64(b[8:])),
		ts:     int64(be.Uint64(b[16:])),
		prev:   be.Uint32(b[24:]),
	}, true
}

// KeyHash is the 64-bit FNV-1a hash of topic + "#" + key, the index key of
// RocketMQ's IndexService ("<topic>#<key>"). It takes strings or byte
// slices, so keys read from a stored record need no copy.
func KeyHash[T ~string | ~[]byte](topic, key T) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(topic); i++ {
		h = (h ^ uint64(topic[i])) * prime64
	}
	h = (h ^ '#') * prime64
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime64
	}
	return h
}

// entriesStart is the byte offset of entry number 1 in a file with the
// given slot count (entries are numbered from 1; 0 means "none").
func entriesStart(slots uint32) int64 { return headerRegion + int64(slots)*slotSize }

// entryPos is the byte offset of entry n (1-based).
func entryPos(slots uint32, n uint32) int64 { return entriesStart(slots) + int64(n-1)*entrySize }
