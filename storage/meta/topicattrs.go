package meta

// Topic attributes, as RocketMQ 5 keeps them (common/.../TopicAttributes,
// attribute/AttributeParser, attribute/AttributeUtil): UPDATE_AND_CREATE_TOPIC
// carries header "attributes", a modification list such as
// "+message.type=FIFO,+queue.type=SimpleCQ,-reserve.time" ("+k=v" adds or
// changes k, "-k" deletes it). The broker applies it to the topic's current
// attributes; the result (plain keys, no sign) is stored in topics.json and
// answered by GET_TOPIC_CONFIG / GET_ALL_TOPIC_CONFIG under "attributes".

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ErrAttribute means a topic attribute modification is malformed or names
// an unknown key, a value outside the key's set, or an unchangeable key.
var ErrAttribute = errors.New("meta: invalid topic attribute")

// Topic attribute keys (RocketMQ TopicAttributes).
const (
	// AttrMessageType is the topic's message type (TopicMessageType).
	AttrMessageType = "message.type"
	// AttrQueueType is the consume queue type (BatchCQ, SimpleCQ); fixed at creation.
	AttrQueueType = "queue.type"
	// AttrCleanupPolicy is DELETE or COMPACTION; fixed at creation.
	AttrCleanupPolicy = "cleanup.policy"
	// AttrReserveTime is the tiered store's reserve time (-1..MaxInt64).
	AttrReserveTime = "reserve.time"
	// AttrLiteExpiration is a LITE topic's idle time, in minutes, after
	// which a lite topic with no new message is deleted (RocketMQ 5.5
	// TopicAttributes.LITE_EXPIRATION_ATTRIBUTE: -1..43200, -1 never).
	AttrLiteExpiration = "lite.topic.expiration"
)

// MaxLiteExpirationMinutes bounds lite.topic.expiration (30 days).
const MaxLiteExpirationMinutes = 30 * 24 * 60

// MessageType is a topic's or a message's type (RocketMQ TopicMessageType).
type MessageType string

// The message types of RocketMQ 5.
const (
	MessageTypeUnspecified MessageType = "UNSPECIFIED"
	MessageTypeNormal      MessageType = "NORMAL"
	MessageTypeFIFO        MessageType = "FIFO"
	MessageTypeDelay       MessageType = "DELAY"
	MessageTypeTransaction MessageType = "TRANSACTION"
	MessageTypePriority    MessageType = "PRIORITY"
	MessageTypeLite        MessageType = "LITE"
	MessageTypeMixed       MessageType = "MIXED"
)

// topicAttr describes one attribute: changeable after creation, and its
// value check.
type topicAttr struct {
	changeable bool
	verify     func(string) error
}

func enumAttr(values ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(values, v) {
			return fmt.Errorf("value is not in set: [%s]", strings.Join(values, ", "))
		}
		return nil
	}
}

// topicAttrs are RocketMQ's TopicAttributes.ALL.
var topicAttrs = map[string]topicAttr{
	AttrQueueType:     {changeable: false, verify: enumAttr("BatchCQ", "SimpleCQ")},
	AttrCleanupPolicy: {changeable: false, verify: enumAttr("COMPACTION", "DELETE")},
	AttrMessageType: {changeable: true, verify: enumAttr(string(MessageTypeUnspecified), string(MessageTypeNormal),
		string(MessageTypeFIFO), string(MessageTypeDelay), string(MessageTypeTransaction), string(MessageTypePriority),
		string(MessageTypeLite), string(MessageTypeMixed))},
	AttrLiteExpiration: {changeable: true, verify: func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 || n > MaxLiteExpirationMinutes {
			return fmt.Errorf("value is not in range(-1, %d)", MaxLiteExpirationMinutes)
		}
		return nil
	}},
	AttrReserveTime: {changeable: true, verify: func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return fmt.Errorf("value is not in range(-1, %d)", int64(^uint64(0)>>1))
		}
		return nil
	}},
}

// maxAttrText bounds the attributes header (RocketMQ has no bound; a
// header is at most a few KiB in practice).
const maxAttrText = 4096

// ParseAttributes parses a modification list as AttributeParser.parseToMap
// does: comma-separated items, "+key=value" to add or change, "-key" to
// delete; the map's keys keep their sign. "" is no modification.
func ParseAttributes(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	if len(s) > maxAttrText {
		return nil, fmt.Errorf("%w: attributes longer than %d bytes", ErrAttribute, maxAttrText)
	}
	for _, kv := range strings.Split(s, ",") {
		key, value, hasValue := strings.Cut(kv, "=")
		switch {
		case hasValue && !strings.HasPrefix(key, "+"):
			return nil, fmt.Errorf("%w: add/alter attribute format is wrong: %q", ErrAttribute, key)
		case hasValue && (value == "" || strings.Contains(value, "=")):
			return nil, fmt.Errorf("%w: attribute %q has a bad value %q", ErrAttribute, key, value)
		case !hasValue && !strings.HasPrefix(key, "-"):
			return nil, fmt.Errorf("%w: delete attribute format is wrong: %q", ErrAttribute, key)
		}
		if real := key[1:]; real == "" || strings.ContainsAny(real, "+-") {
			return nil, fmt.Errorf("%w: kv string format wrong: %q", ErrAttribute, kv)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%w: key duplication: %q", ErrAttribute, key)
		}
		out[key] = value
	}
	return out, nil
}

// FormatAttributes is ParseAttributes' inverse for a topic's plain
// attributes: "+k=v" items, sorted by key.
func FormatAttributes(attrs map[string]string) string {
	keys := slices.Sorted(maps.Keys(attrs))
	items := make([]string, 0, len(keys))
	for _, k := range keys {
		items = append(items, "+"+k+"="+attrs[k])
	}
	return strings.Join(items, ",")
}

// FormatModifications writes a modification map (signed keys, as
// ParseAttributes returns and as RocketMQ's TopicConfig.attributes carries
// it in UPDATE_AND_CREATE_TOPIC_LIST bodies) back as a list, sorted:
// AttributeParser.parseToString.
func FormatModifications(mods map[string]string) string {
	keys := slices.Sorted(maps.Keys(mods))
	items := make([]string, 0, len(keys))
	for _, k := range keys {
		if v := mods[k]; v != "" {
			items = append(items, k+"="+v)
		} else {
			items = append(items, k)
		}
	}
	return strings.Join(items, ",")
}

// AlterAttributes applies a parsed modification list to a topic's current
// attributes, as AttributeUtil.alterCurrentAttributes does: on creation
// only "+" items are allowed; afterwards "-" must name an existing key and
// unchangeable keys (queue.type, cleanup.policy) may not be set or
// deleted; every key must be one of TopicAttributes and every value in its
// set. It returns the new attributes (nil when empty); current is not
// changed.
func AlterAttributes(create bool, current, mods map[string]string) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	for _, key := range slices.Sorted(maps.Keys(mods)) {
		value, real, add := mods[key], key[1:], key[0] == '+'
		if !add && key[0] != '-' || real == "" {
			return nil, fmt.Errorf("%w: wrong format key: %q", ErrAttribute, key)
		}
		other := "-" + real
		if !add {
			other = "+" + real
		}
		if _, dup := mods[other]; dup {
			return nil, fmt.Errorf("%w: alter duplication key. key: %s", ErrAttribute, real)
		}
		attr, ok := topicAttrs[real]
		if !ok {
			return nil, fmt.Errorf("%w: unsupported key: %s (known: %s)", ErrAttribute, real,
				strings.Join(slices.Sorted(maps.Keys(topicAttrs)), ", "))
		}
		_, exists := current[real]
		switch {
		case create && !add:
			return nil, fmt.Errorf("%w: only add attribute is supported while creating topic. key: %s", ErrAttribute, real)
		case !create && !attr.changeable:
			return nil, fmt.Errorf("%w: attempt to update an unchangeable attribute. key: %s", ErrAttribute, real)
		case !add && !exists:
			return nil, fmt.Errorf("%w: attempt to delete a nonexistent key: %s", ErrAttribute, real)
		}
		if !add {
			delete(out, real)
			continue
		}
		if err := attr.verify(value); err != nil {
			return nil, fmt.Errorf("%w: key %s: %v", ErrAttribute, real, err)
		}
		out[real] = value
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// plainAttributes normalizes stored attributes: nil when empty (RocketMQ
// writes "attributes":{}), and keys stored with their "+" (as some files
// hold them) without it.
func plainAttributes(attrs map[string]string) map[string]string {
	if len(attrs) == 0 {
		return nil
	}
	for k, v := range attrs {
		if real, ok := strings.CutPrefix(k, "+"); ok {
			delete(attrs, k)
			if _, has := attrs[real]; !has {
				attrs[real] = v
			}
		}
	}
	return attrs
}

// TopicMessageType is the topic's message.type; "" when it has none.
func (c TopicConfig) TopicMessageType() MessageType {
	return MessageType(c.Attributes[AttrMessageType])
}

// MessageTypeOf is a message's type from its properties, as
// TopicMessageType.parseFromMessageProperty decides it (the order keeps
// the types exclusive): TRAN_MSG=true is TRANSACTION; DELAY or a TIMER_*
// property DELAY; __SHARDINGKEY (a message group) FIFO; PRIORITY
// PRIORITY; __LITE_TOPIC LITE; else NORMAL.
func MessageTypeOf(props map[string]string) MessageType {
	has := func(k string) bool { _, ok := props[k]; return ok }
	switch {
	case strings.EqualFold(props["TRAN_MSG"], "true"):
		return MessageTypeTransaction
	case has("DELAY") || has("TIMER_DELIVER_MS") || has("TIMER_DELAY_SEC") || has("TIMER_DELAY_MS"):
		return MessageTypeDelay
	case has("__SHARDINGKEY"):
		return MessageTypeFIFO
	case has("PRIORITY"):
		return MessageTypePriority
	case has("__LITE_TOPIC"):
		return MessageTypeLite
	}
	return MessageTypeNormal
}

// Accepts reports whether a topic of type t takes a message of type m:
// MIXED, and a topic without a type (wheelmq: every topic made before
// message types, by auto-creation or by remoting clients), take every
// type; otherwise the types must match (RocketMQ's proxy
// DefaultTopicMessageTypeValidator; UNSPECIFIED is never taken).
func (t MessageType) Accepts(m MessageType) bool {
	switch {
	case m == MessageTypeUnspecified:
		return false
	case t == "" || t == MessageTypeMixed:
		return true
	}
	return t == m
}

// CheckMessageType returns the refusal remark for a message of type m sent
// to topic (RocketMQ's proxy words), or "" when the topic takes it.
func CheckMessageType(topic string, t, m MessageType) string {
	if t.Accepts(m) {
		return ""
	}
	return fmt.Sprintf("TopicMessageType validate failed, the expected type is %s, but actual type is %s (topic %s has message.type=%s)",
		t, m, topic, t)
}
