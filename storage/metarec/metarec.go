// Package metarec encodes the broker's replicated metadata as system
// records in the CommitLog: consumer-offset snapshots, topic and
// subscription-group creates, updates and deletes. They are stored as
// ordinary stored-message records of the system topic Topic (queue 0), so
// they travel with the CommitLog byte stream, are confirmed like data and
// are read back through that topic's consume queue. The record's own
// BODYCRC covers the body below.
//
// Body layout (big-endian; uvarint is Go's encoding/binary Uvarint):
//
//	+---------+------+----------+-------------------------+
//	| version | kind |  origin  | payload (kind-specific) |
//	|   1 B   | 1 B  | 8 B u64  |                         |
//	+---------+------+----------+-------------------------+
//
//	version  Version (1).
//	kind     KindOffsets, KindTopicPut, KindTopicDelete, KindGroupPut,
//	         KindGroupDelete, KindRequestModePut, KindOffsetsDrop.
//	origin   the writing broker process's random instance id: a node skips
//	         records of its own running instance (its stages hold them).
//	payload  uvarint count, then count entries:
//	         offsets:  uvarint len, topic, uvarint len, group, i32 queueId,
//	                   i64 offset
//	         put:      uvarint len, JSON of the config (meta.TopicConfig or
//	                   meta.SubscriptionGroupConfig, as in the config files)
//	         delete:   uvarint len, name (a topic or group delete; an
//	                   offsets drop: a group whose offsets are forgotten)
//	         request mode put: uvarint len, group, uvarint len, topic,
//	                   u8 mode (1 PULL, 2 POP), i32 popShareQueueNum
//
// A full snapshot is a run of KindOffsets, KindTopicPut, KindGroupPut and
// KindRequestModePut records holding every entry; it applies like any other record (an
// upsert), so there is no snapshot kind.
//
// The message around the body: topic Topic, queue 0, tag KindTag, property
// PropKind = the kind's name (for inspect tools), born and store host the
// writing broker's.
package metarec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"

	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// PropKind is the message property holding the kind's name.
const PropKind = "WHEELMQ_META_KIND"

// KindTag is the tag of every metadata record.
const KindTag = "meta"

// Message encodes r as a complete stored-message record of Topic (queue
// 0; the writer assigns offsets), stamped nowMs.
func Message(r Record, storeHost netip.AddrPort, nowMs int64) ([]byte, error) {
	body, err := Encode(nil, r)
	if err != nil {
		return nil, err
	}
	m := &message.Record{BornTimestamp: nowMs, BornHost: storeHost, StoreTimestamp: nowMs, StoreHost: storeHost,
		Body: body, Topic: Topic, Properties: message.EncodeProperties(map[string]string{
			message.PropTags: KindTag, PropKind: r.Kind.String()})}
	out, err := m.Encode(make([]byte, 0, m.EncodedSize()))
	if err != nil {
		return nil, fmt.Errorf("metarec: encode message: %w", err)
	}
	return out, nil
}

// FromMessage decodes the metadata record in a stored-message record.
func FromMessage(rec []byte) (Record, error) {
	body, err := message.PeekBody(rec)
	if err != nil {
		return Record{}, fmt.Errorf("metarec: %w: %w", ErrInvalid, err)
	}
	return Decode(body)
}

// Topic is the system topic the records are stored in (queue 0). It is
// never in the topic table: no route, not in topic lists; producers may not
// send to it and admins may not create it (the rmq_sys_ prefix).
const Topic = meta.TopicWheelMQMeta

// IsSystemTopic reports whether topic is Topic.
func IsSystemTopic(topic string) bool { return topic == Topic }

// Version is the body format version.
const Version = 1

// HeaderSize is the size of version, kind and origin.
const HeaderSize = 10

// Kind says what a record carries.
type Kind uint8

// The record kinds.
const (
	KindOffsets     Kind = 1
	KindTopicPut    Kind = 2
	KindTopicDelete Kind = 3
	KindGroupPut    Kind = 4
	KindGroupDelete Kind = 5
	// KindRequestModePut sets consumption models (SET_MESSAGE_REQUEST_MODE,
	// actors/pop/mode).
	KindRequestModePut Kind = 6
	// KindOffsetsDrop forgets every committed offset of the named groups
	// (a group delete with cleanOffset). A group delete alone keeps them,
	// as RocketMQ's broker does.
	KindOffsetsDrop Kind = 7
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindOffsets:
		return "offsets"
	case KindTopicPut:
		return "topic_put"
	case KindTopicDelete:
		return "topic_delete"
	case KindGroupPut:
		return "group_put"
	case KindGroupDelete:
		return "group_delete"
	case KindRequestModePut:
		return "request_mode_put"
	case KindOffsetsDrop:
		return "offsets_drop"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ErrInvalid marks a body that does not decode.
var ErrInvalid = errors.New("metarec: invalid record")

// Offset is one committed consumer offset.
type Offset struct {
	Topic   string
	Group   string
	QueueID int32
	Offset  int64
}

// Record is one decoded metadata record. Only the field of its Kind is set.
type Record struct {
	Kind    Kind
	Origin  uint64
	Offsets []Offset
	Topics  []meta.TopicConfig
	Groups  []meta.SubscriptionGroupConfig
	Names   []string // deleted topics or groups
	Modes   []meta.RequestMode
}

// Request modes on the wire.
const (
	modePull byte = 1
	modePop  byte = 2
)

// Encode appends the body of r to dst.
func Encode(dst []byte, r Record) ([]byte, error) {
	dst = append(dst, Version, byte(r.Kind))
	dst = binary.BigEndian.AppendUint64(dst, r.Origin)
	switch r.Kind {
	case KindOffsets:
		dst = binary.AppendUvarint(dst, uint64(len(r.Offsets)))
		for _, o := range r.Offsets {
			dst = appendString(dst, o.Topic)
			dst = appendString(dst, o.Group)
			dst = binary.BigEndian.AppendUint32(dst, uint32(o.QueueID))
			dst = binary.BigEndian.AppendUint64(dst, uint64(o.Offset))
		}
	case KindTopicPut:
		dst = binary.AppendUvarint(dst, uint64(len(r.Topics)))
		for _, c := range r.Topics {
			b, err := json.Marshal(c)
			if err != nil {
				return dst, fmt.Errorf("metarec: encode topic %s: %w", c.TopicName, err)
			}
			dst = appendString(dst, string(b))
		}
	case KindGroupPut:
		dst = binary.AppendUvarint(dst, uint64(len(r.Groups)))
		for _, c := range r.Groups {
			b, err := json.Marshal(c)
			if err != nil {
				return dst, fmt.Errorf("metarec: encode group %s: %w", c.GroupName, err)
			}
			dst = appendString(dst, string(b))
		}
	case KindTopicDelete, KindGroupDelete, KindOffsetsDrop:
		dst = binary.AppendUvarint(dst, uint64(len(r.Names)))
		for _, n := range r.Names {
			dst = appendString(dst, n)
		}
	case KindRequestModePut:
		dst = binary.AppendUvarint(dst, uint64(len(r.Modes)))
		for _, m := range r.Modes {
			var b byte
			switch m.Mode {
			case meta.RequestModePull:
				b = modePull
			case meta.RequestModePop:
				b = modePop
			default:
				return dst, fmt.Errorf("metarec: encode request mode %q of %s/%s: %w", m.Mode, m.ConsumerGroup, m.Topic, ErrInvalid)
			}
			dst = appendString(dst, m.ConsumerGroup)
			dst = appendString(dst, m.Topic)
			dst = append(dst, b)
			dst = binary.BigEndian.AppendUint32(dst, uint32(m.PopShareQueueNum))
		}
	default:
		return dst, fmt.Errorf("metarec: encode %v: %w", r.Kind, ErrInvalid)
	}
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads a body, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("metarec: truncated or bad %s: %w", what, ErrInvalid)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) fixed(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// count reads an entry count, bounded by what the rest of the body could
// hold (each entry takes at least min bytes), so a bad count allocates
// nothing large.
func (d *decoder) count(min int) int {
	n := d.uvarint("count")
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail("count")
	}
	if d.err != nil || n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// Decode decodes a record body.
func Decode(body []byte) (Record, error) {
	if len(body) < HeaderSize {
		return Record{}, fmt.Errorf("metarec: body of %d bytes: %w", len(body), ErrInvalid)
	}
	if body[0] != Version {
		return Record{}, fmt.Errorf("metarec: version %d: %w", body[0], ErrInvalid)
	}
	r := Record{Kind: Kind(body[1]), Origin: binary.BigEndian.Uint64(body[2:])}
	d := &decoder{b: body[HeaderSize:]}
	switch r.Kind {
	case KindOffsets:
		n := d.count(14)
		r.Offsets = make([]Offset, 0, n)
		for range n {
			o := Offset{Topic: string(d.bytes("topic")), Group: string(d.bytes("group"))}
			if v := d.fixed(12, "queue offset"); v != nil {
				o.QueueID = int32(binary.BigEndian.Uint32(v))
				o.Offset = int64(binary.BigEndian.Uint64(v[4:]))
			}
			r.Offsets = append(r.Offsets, o)
		}
	case KindTopicPut:
		n := d.count(1)
		for range n {
			var c meta.TopicConfig
			if b := d.bytes("topic config"); d.err == nil {
				if err := json.Unmarshal(b, &c); err != nil || c.TopicName == "" {
					d.fail("topic config")
				}
			}
			r.Topics = append(r.Topics, c)
		}
	case KindGroupPut:
		n := d.count(1)
		for range n {
			var c meta.SubscriptionGroupConfig
			if b := d.bytes("group config"); d.err == nil {
				if err := json.Unmarshal(b, &c); err != nil || c.GroupName == "" {
					d.fail("group config")
				}
			}
			r.Groups = append(r.Groups, c)
		}
	case KindTopicDelete, KindGroupDelete, KindOffsetsDrop:
		n := d.count(1)
		for range n {
			r.Names = append(r.Names, string(d.bytes("name")))
		}
	case KindRequestModePut:
		n := d.count(7)
		for range n {
			m := meta.RequestMode{ConsumerGroup: string(d.bytes("group")), Topic: string(d.bytes("topic"))}
			if v := d.fixed(5, "mode"); v != nil {
				switch v[0] {
				case modePull:
					m.Mode = meta.RequestModePull
				case modePop:
					m.Mode = meta.RequestModePop
				default:
					d.fail("mode")
				}
				m.PopShareQueueNum = int32(binary.BigEndian.Uint32(v[1:]))
			}
			r.Modes = append(r.Modes, m)
		}
	default:
		return Record{}, fmt.Errorf("metarec: kind %d: %w", body[1], ErrInvalid)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return Record{}, d.err
	}
	return r, nil
}

// Describe labels a stored record of Topic for inspect tools ("wheelctl
// store dump"): "system record (wheelmq metadata): ..." with its kind,
// origin and entries; "" for a record of another topic.
func Describe(rec []byte) string {
	topic, err := message.PeekTopic(rec)
	if err != nil || topic != Topic {
		return ""
	}
	r, err := FromMessage(rec)
	if err != nil {
		return "system record (wheelmq metadata), UNDECODABLE: " + err.Error()
	}
	n := 0
	switch r.Kind {
	case KindOffsets:
		n = len(r.Offsets)
	case KindTopicPut:
		n = len(r.Topics)
	case KindGroupPut:
		n = len(r.Groups)
	case KindRequestModePut:
		n = len(r.Modes)
	default:
		n = len(r.Names)
	}
	return fmt.Sprintf("system record (wheelmq metadata): %s, %d entries, origin %016x", r.Kind, n, r.Origin)
}
