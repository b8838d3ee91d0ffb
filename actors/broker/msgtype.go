package broker

// The send path's message type check, for every front door (RocketMQ 5's
// proxy: ProducerProcessor with enableTopicMessageTypeCheck and
// DefaultTopicMessageTypeValidator). A message's type comes from its
// properties in RocketMQ's order (meta.MessageTypeOf, TopicMessageType
// .parseFromMessageProperty: TRAN_MSG, then DELAY/TIMER_*, then
// __SHARDINGKEY); a topic with message.type set to another type refuses it
// (TypeMismatch) with the proxy's words. Retry and DLQ topics, messages
// the broker moves itself (TRANSFER_FLAG), topics with no type or MIXED are
// not checked.

import (
	"strings"

	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// PropTransferFlag marks a message the broker or proxy moves itself
// (RocketMQ MessageConst.PROPERTY_TRANSFER_FLAG): not checked.
const PropTransferFlag = "TRANSFER_FLAG"

// TypeChecked reports whether sends to cfg have their type checked.
func (b *Broker) TypeChecked(cfg meta.TopicConfig) bool {
	t := cfg.TopicMessageType()
	if t == "" || t == meta.MessageTypeMixed || !b.p.Settings().TopicMessageTypeCheck {
		return false
	}
	return !strings.HasPrefix(cfg.TopicName, meta.RetryGroupTopicPrefix) && !strings.HasPrefix(cfg.TopicName, meta.DLQGroupTopicPrefix)
}

// CheckMessageType refuses a message whose type cfg does not take.
func (b *Broker) CheckMessageType(cfg meta.TopicConfig, props map[string]string) *Error {
	if !b.TypeChecked(cfg) {
		return nil
	}
	if _, moved := props[PropTransferFlag]; moved {
		return nil
	}
	if remark := meta.CheckMessageType(cfg.TopicName, cfg.TopicMessageType(), meta.MessageTypeOf(props)); remark != "" {
		return &Error{Status: TypeMismatch, Remark: remark}
	}
	return nil
}

// PlainTypeOK is CheckMessageType for a codec's fast path, from encoded
// properties that hold no timer and no transaction: it reports whether
// the message may be stored to cfg without the general path (the topic is
// unchecked, or NORMAL and the message has no group, or FIFO and it has
// one, or PRIORITY and it has a valid priority and no group). A priority
// message to a PRIORITY topic then takes the queue PlainPriorityQueue
// names. Anything else goes to Send, which decides.
func (b *Broker) PlainTypeOK(cfg meta.TopicConfig, props []byte) bool {
	if _, lite := message.LookupPropertyBytes(props, message.PropLiteTopic); lite || LiteTopic(cfg) {
		return false // Send checks it and appends it to its lite topic (litesend.go)
	}
	_, prio := message.LookupPropertyBytes(props, message.PropPriority)
	if prio {
		if _, ok := PlainPriorityQueue(cfg, props); !ok {
			return false // Send refuses a bad priority, or stores it where it was sent
		}
	}
	if !b.TypeChecked(cfg) {
		return true
	}
	_, grouped := message.LookupPropertyBytes(props, message.PropShardingKey)
	_, moved := message.LookupPropertyBytes(props, PropTransferFlag)
	switch cfg.TopicMessageType() {
	case meta.MessageTypeNormal:
		return !grouped && !prio && !moved
	case meta.MessageTypeFIFO:
		return grouped && !prio && !moved
	case meta.MessageTypePriority:
		return prio && !grouped && !moved
	}
	return false
}

// PlainPriorityQueue is PriorityQueue for a codec's fast path, from
// encoded properties: the queue of a message with a valid priority sent to
// a PRIORITY topic (false: none, or the general path decides).
func PlainPriorityQueue(cfg meta.TopicConfig, props []byte) (int32, bool) {
	v, has := message.LookupPropertyBytes(props, message.PropPriority)
	if !has || !PriorityTopic(cfg) {
		return 0, false
	}
	q, ok, err := PriorityQueue(cfg, map[string]string{message.PropPriority: string(v)})
	return q, ok && err == nil
}

// MessageType is the type of a message with props (for a codec that shows
// a stored message's type): RocketMQ's order, as the type check reads it.
func MessageType(props map[string]string, sysFlag int32) meta.MessageType {
	if message.TransactionType(sysFlag) == message.SysFlagTransactionPrepared {
		return meta.MessageTypeTransaction
	}
	return meta.MessageTypeOf(props)
}

// PriorityQueue is the priority rule of the send path, for every front
// door (RocketMQ 5.4's priority messages, RIP-80; docs/priority.md): a
// message's PRIORITY must be an integer in [0, message.MaxPriority]
// (IllegalMessage otherwise, whatever the topic), and on a topic whose
// message.type is PRIORITY it chooses the queue: min(priority,
// writeQueues-1), so that each queue holds one priority level (the top one
// every priority above it) and a POP reads the highest queue first. ok is
// false when the message keeps the queue it was sent to.
func PriorityQueue(cfg meta.TopicConfig, props map[string]string) (queue int32, ok bool, err *Error) {
	v, has := props[message.PropPriority]
	if !has {
		return 0, false, nil
	}
	p, perr := message.ParsePriority(v)
	if perr != nil {
		return 0, false, &Error{Status: IllegalMessage, Remark: perr.Error(), Err: perr}
	}
	if cfg.TopicMessageType() != meta.MessageTypePriority || cfg.WriteQueueNums <= 0 {
		return 0, false, nil
	}
	return min(p, cfg.WriteQueueNums-1), true, nil
}

// PriorityTopic reports whether a POP of cfg reads its queues highest
// first (its message.type is PRIORITY).
func PriorityTopic(cfg meta.TopicConfig) bool {
	return cfg.TopicMessageType() == meta.MessageTypePriority
}
