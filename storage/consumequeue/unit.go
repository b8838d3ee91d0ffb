package consumequeue

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// UnitSize is the size of one consume-queue unit in bytes. Part of the
// on-disk format.
const UnitSize = 20

// maxTopicLen is the longest accepted topic name (RocketMQ's limit for
// %RETRY%/%DLQ% topics).
const maxTopicLen = 255

// fileNameLen is the number of digits in a unit file name.
const fileNameLen = 20

// Unit is one consume-queue entry: where a message's record sits in the
// CommitLog and its tag hash.
type Unit struct {
	// Offset is the record's global CommitLog offset.
	Offset int64
	// Size is the record's size in bytes (TOTALSIZE).
	Size int32
	// TagsCode is the hash of the message's TAGS (Java String.hashCode),
	// or the delivery time for scheduled messages.
	TagsCode int64
}

// HoleSize is the size of a hole unit: the record for that queue offset was
// lost to CommitLog damage (the dispatcher skipped the damaged span and met
// the queue's next record with a higher QUEUEOFFSET). A hole keeps unit
// index and QUEUEOFFSET equal; its Offset lies between its neighbours' and
// points at nothing. Readers skip holes. Part of the on-disk format.
const HoleSize int32 = -1

// Hole returns a hole unit at commit-log offset off (see HoleSize).
func Hole(off int64) Unit { return Unit{Offset: off, Size: HoleSize} }

// IsHole reports whether u is a hole unit.
func (u Unit) IsHole() bool { return u.Size == HoleSize }

// QueueID names one consume queue.
type QueueID struct {
	// Topic is the topic name.
	Topic string
	// QueueID is the queue number inside the topic.
	QueueID int32
}

// String returns "topic/queueId".
func (id QueueID) String() string { return id.Topic + "/" + strconv.Itoa(int(id.QueueID)) }

// appendUnit appends the 20-byte encoding of u to buf.
func appendUnit(buf []byte, u Unit) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(u.Offset))
	buf = binary.BigEndian.AppendUint32(buf, uint32(u.Size))
	return binary.BigEndian.AppendUint64(buf, uint64(u.TagsCode))
}

// DecodeUnit decodes the first 20 bytes of b (read-only tools).
func DecodeUnit(b []byte) Unit { return decodeUnit(b) }

// CheckUnit reports why u cannot follow prev (hasPrev false: u is the first
// unit), or "" if it can: the sanity rules recovery applies (read-only
// tools).
func CheckUnit(u Unit, prev Unit, hasPrev bool) string { return checkUnit(u, prev, hasPrev) }

// ParseFileName returns the first logical offset a unit file's name encodes.
func ParseFileName(name string) (int64, bool) { return parseFileName(name) }

// decodeUnit decodes the first 20 bytes of b.
func decodeUnit(b []byte) Unit {
	_ = b[UnitSize-1]
	return Unit{
		Offset:   int64(binary.BigEndian.Uint64(b[0:8])),
		Size:     int32(binary.BigEndian.Uint32(b[8:12])),
		TagsCode: int64(binary.BigEndian.Uint64(b[12:20])),
	}
}

// checkUnit reports why u cannot follow prev (hasPrev false: u is the first
// unit), or "" if it can.
func checkUnit(u Unit, prev Unit, hasPrev bool) string {
	switch {
	case u.Offset < 0:
		return fmt.Sprintf("negative commit-log offset %d", u.Offset)
	case u.Size <= 0 && u.Size != HoleSize:
		return fmt.Sprintf("size %d", u.Size)
	case hasPrev && u.Offset <= prev.Offset:
		return fmt.Sprintf("commit-log offset %d not above previous %d", u.Offset, prev.Offset)
	}
	return ""
}

// validTopic reports whether topic is a RocketMQ topic name that is safe as a
// directory name.
func validTopic(topic string) bool {
	if topic == "" || len(topic) > maxTopicLen {
		return false
	}
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '%', c == '|', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// parseQueueDir returns the queue id a directory name encodes (canonical
// non-negative decimal).
func parseQueueDir(name string) (int32, bool) {
	v, err := strconv.ParseInt(name, 10, 32)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != name {
		return 0, false
	}
	return int32(v), true
}

// fileName returns the name of the unit file whose first unit is base.
func fileName(base int64) string { return fmt.Sprintf("%0*d", fileNameLen, base) }

// parseFileName returns the first logical offset encoded in a file name.
func parseFileName(name string) (int64, bool) {
	if len(name) != fileNameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil
}
