package broker

// The send rules of lite messages (RocketMQ 5.5, RIP-83; docs/lite.md),
// for every front door: a message with a lite topic (__LITE_TOPIC) goes
// only to a LITE topic, and a LITE topic takes only messages with one
// (whatever --topic-message-type-check says: a lite topic is where the
// message is delivered from); each lite topic maps to one write queue of
// its parent (FNV-1a of its name), so its messages keep their order; once
// stored, the message is appended to its lite topic.

import (
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// LiteTopic reports whether cfg is a LITE topic.
func LiteTopic(cfg meta.TopicConfig) bool { return cfg.TopicMessageType() == meta.MessageTypeLite }

// checkLite refuses a lite message to a topic that is not LITE, a
// message without a lite topic to a LITE topic, a bad lite topic name, and
// a lite message of another type too (a group, a delay, a priority, a
// transaction). It returns the lite topic ("" for a message that is not
// lite).
func checkLite(cfg meta.TopicConfig, props map[string]string, sysFlag int32) (string, *Error) {
	lite, has := props[message.PropLiteTopic]
	if _, moved := props[PropTransferFlag]; moved {
		return "", nil
	}
	isLite := LiteTopic(cfg)
	switch {
	case has && !isLite:
		return "", Errorf(TypeMismatch, "TopicMessageType validate failed, the expected type is %s, but actual type is LITE (topic %s is not a LITE topic; a lite topic needs a LITE parent)",
			typeName(cfg), cfg.TopicName)
	case !has && isLite:
		return "", Errorf(TypeMismatch, "TopicMessageType validate failed, the expected type is LITE, but actual type is %s (topic %s takes only messages with a lite topic)",
			MessageType(props, sysFlag), cfg.TopicName)
	case !has:
		return "", nil
	}
	if err := message.ValidateLiteTopic(lite); err != nil {
		return "", &Error{Status: IllegalMessage, Remark: err.Error(), Err: err}
	}
	if t := MessageType(props, sysFlag); t != meta.MessageTypeLite {
		return "", Errorf(TypeMismatch, "a lite message cannot also be of type %s", t)
	}
	return lite, nil
}

func typeName(cfg meta.TopicConfig) string {
	if t := cfg.TopicMessageType(); t != "" {
		return string(t)
	}
	return "NORMAL"
}

// liteStored appends a stored lite message to its lite topic (created on
// first use) and wakes its subscribers.
func (b *Broker) liteStored(parent, lite string, off int64) {
	s := &b.lite
	now := nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return // not open (a test broker): nothing is delivered as lite
	}
	b.litePromotedLocked() // a promoted replica indexes what it holds first
	k := liteKey{parent, lite}
	if s.storeLocked(k, off, now) { // an evicted lite topic is reloaded first (liteevict.go)
		s.wakeLocked(k)
	}
}
