package router

// The send path's message type check (RocketMQ 5's proxy:
// ProducerProcessor with enableTopicMessageTypeCheck and
// DefaultTopicMessageTypeValidator; a 4.x/5.x broker alone does not
// check). A message's type comes from its properties (meta.MessageTypeOf:
// TRAN_MSG, DELAY/TIMER_*, __SHARDINGKEY); a topic with message.type set
// to another type refuses it with MESSAGE_ILLEGAL (13, as the proxy's
// remoting side maps MESSAGE_PROPERTY_CONFLICT_WITH_TYPE) and the proxy's
// words. Retry and DLQ topics, messages the broker moves itself
// (TRANSFER_FLAG), topics with no type or MIXED are not checked.

import (
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// propTransferFlag marks a message the broker or proxy moves itself
// (RocketMQ MessageConst.PROPERTY_TRANSFER_FLAG): not checked.
const propTransferFlag = "TRANSFER_FLAG"

// typeChecked reports whether sends to cfg have their type checked.
func (r *Router) typeChecked(cfg meta.TopicConfig) bool {
	t := cfg.TopicMessageType()
	if t == "" || t == meta.MessageTypeMixed || !r.p.Settings().TopicMessageTypeCheck {
		return false
	}
	return !strings.HasPrefix(cfg.TopicName, meta.RetryGroupTopicPrefix) && !strings.HasPrefix(cfg.TopicName, meta.DLQGroupTopicPrefix)
}

// checkMessageType refuses a message whose type cfg does not take.
func (r *Router) checkMessageType(cfg meta.TopicConfig, props map[string]string) *Refusal {
	if !r.typeChecked(cfg) {
		return nil
	}
	if _, moved := props[propTransferFlag]; moved {
		return nil
	}
	if remark := meta.CheckMessageType(cfg.TopicName, cfg.TopicMessageType(), meta.MessageTypeOf(props)); remark != "" {
		return &Refusal{Code: remoting.MessageIllegal, Remark: remark}
	}
	return nil
}

// fastTypeOK reports whether the hot path may store a plain send (no
// timer, no transaction: scanProperties declined those) to cfg: the topic
// is unchecked, or NORMAL and the message has no group, or FIFO and it has
// one. Anything else goes to the general path, which decides.
func (r *Router) fastTypeOK(cfg meta.TopicConfig, props []byte) bool {
	if !r.typeChecked(cfg) {
		return true
	}
	_, grouped := message.LookupPropertyBytes(props, message.PropShardingKey)
	_, prio := message.LookupPropertyBytes(props, "PRIORITY")
	_, moved := message.LookupPropertyBytes(props, propTransferFlag)
	switch cfg.TopicMessageType() {
	case meta.MessageTypeNormal:
		return !grouped && !prio && !moved
	case meta.MessageTypeFIFO:
		return grouped && !prio && !moved
	}
	return false
}
