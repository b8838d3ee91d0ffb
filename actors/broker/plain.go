package broker

// The plain send: one message to an existing, writable topic, with no
// delay or timer, transaction, retry, reply requester or batch, whose
// encoded properties are stored as they are (with CLUSTER, and UNIQ_KEY
// when the client sent none, appended). A codec may store such a message
// from its own buffers without Send (the remoting hot path,
// netloop/router/fastsend.go, does); these predicates are Send's rules
// for it, so that the fast path declines (to Send) whatever Send would
// refuse or rewrite. They only read atomics and snapshots.

import (
	"strings"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// PlainReady reports whether plain sends may be stored now: no stage a
// send needs is down, the disk is not full, the writer's backlog has room.
func (b *Broker) PlainReady() bool {
	return b.Ready() && stagesDown(b.send.writer) == nil && !b.p.Disk().Full() &&
		b.send.backlog.Load() < b.cfg.MaxWriterBacklog
}

// PlainTopicOK reports whether a single message (body of bodyLen bytes,
// encoded props, sysFlag, queueID; negative: any) to cfg passes every
// rule of Send that needs no rewrite: the topic's name and permission,
// the body and properties limits, no half message, the queue id in range.
func (b *Broker) PlainTopicOK(cfg meta.TopicConfig, bodyLen, propsLen int, sysFlag, queueID int32) bool {
	topic := cfg.TopicName
	switch {
	case meta.ValidateTopic(topic) != nil, meta.IsClientWriteForbidden(topic),
		strings.HasPrefix(topic, meta.RetryGroupTopicPrefix), cfg.Perm&meta.PermWrite == 0,
		bodyLen == 0, bodyLen > b.p.Settings().MaxMessageSize, propsLen > MaxPropertiesSize,
		message.TransactionType(sysFlag) == message.SysFlagTransactionPrepared,
		queueID >= max(cfg.WriteQueueNums, cfg.ReadQueueNums):
		return false
	}
	return true
}

// declinedProps are the properties that make a send more than a plain one:
// Send plans timers and transactions from them, and a codec learns the
// connection of a request/reply requester (REPLY_TO_CLIENT).
var declinedProps = [...]string{message.PropTranMsg, message.PropDelay, message.PropTimerDelaySec,
	message.PropTimerDelayMS, message.PropTimerDeliverMS, message.PropTimerDelUniqKey, message.PropTimerOutMS,
	message.PropReplyToClient, schedule.Prop}

// ScanPlainProperties checks that every item of the encoded properties is
// a pair Send would keep as it is (non-empty key and value) and that none
// asks for a timer, a transaction or a reply. uniqAt is the last UNIQ_KEY
// value's position in props (uniqLen 0: none).
func ScanPlainProperties(props []byte) (uniqAt, uniqLen int, ok bool) {
	for rest := props; len(rest) > 0; {
		at := len(props) - len(rest)
		k, val, next, pairOK := message.NextProperty(rest)
		if !pairOK || len(val) == 0 {
			return 0, 0, false
		}
		for _, d := range declinedProps {
			if string(k) == d {
				return 0, 0, false
			}
		}
		if string(k) == message.PropUniqKey {
			uniqAt, uniqLen = at+len(k)+1, len(val)
		}
		rest = next
	}
	return uniqAt, uniqLen, true
}
