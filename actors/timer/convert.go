package timer

import (
	"strconv"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// rebuild rebuilds a due timer's message (raw, its stored record) for its
// real topic and queue, as RocketMQ's dequeue does: REAL_TOPIC/REAL_QID name
// the destination, TIMER_ENQUEUE_MS and TIMER_DEQUEUE_MS are added, DELAY is
// removed; body, flags, born and store hosts, reconsume times and UNIQ_KEY
// are kept. reason is non-empty when the message cannot be delivered.
func rebuild(raw []byte, t timerwheel.Timer, nowMs int64) (put, string) {
	if raw == nil {
		return put{}, "unreadable"
	}
	r, _, err := message.Decode(raw)
	if err != nil {
		return put{}, "undecodable"
	}
	topic, _ := message.LookupProperty(r.Properties, message.PropRealTopic)
	qidText, _ := message.LookupProperty(r.Properties, message.PropRealQueueID)
	qid, err := strconv.ParseInt(qidText, 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return put{}, "no_real_topic"
	}
	enq, deq := strconv.FormatInt(t.AddedMs, 10), strconv.FormatInt(nowMs, 10)
	var props []byte
	var ident string
	if !hasAny(r.Properties, message.PropDelay, message.PropTimerEnqueueMS, message.PropTimerDequeueMS) {
		// Common case: append the two properties to the stored ones.
		props = append(make([]byte, 0, len(r.Properties)+64), r.Properties...)
		props = message.AppendProperty(props, message.PropTimerEnqueueMS, enq)
		props = message.AppendProperty(props, message.PropTimerDequeueMS, deq)
		uniq, _ := message.LookupProperty(r.Properties, message.PropUniqKey)
		out, _ := message.LookupProperty(r.Properties, message.PropTimerOutMS)
		ident = uniq + "@" + out
	} else {
		m := message.DecodeProperties(r.Properties)
		m[message.PropTimerEnqueueMS], m[message.PropTimerDequeueMS] = enq, deq
		delete(m, message.PropDelay)
		props, ident = message.EncodeProperties(m), identOf(m)
	}
	out := &message.Record{
		QueueID: int32(qid), Flag: r.Flag, SysFlag: r.SysFlag, BornTimestamp: r.BornTimestamp, BornHost: r.BornHost,
		StoreTimestamp: nowMs, StoreHost: r.StoreHost, ReconsumeTimes: r.ReconsumeTimes,
		PreparedTransactionOffset: r.PreparedTransactionOffset,
		Body:                      r.Body, Topic: topic, Properties: props,
	}
	rec, err := out.Encode(make([]byte, 0, out.EncodedSize()))
	if err != nil {
		return put{}, "unencodable"
	}
	return put{key: writer.QueueKey{Topic: topic, QueueID: int32(qid)}, record: rec, ident: ident, due: t.DeliverMs}, ""
}

// hasAny reports whether raw properties hold any of the keys.
func hasAny(raw []byte, keys ...string) bool {
	for _, k := range keys {
		if _, ok := message.LookupProperty(raw, k); ok {
			return true
		}
	}
	return false
}

// identOf names a written-back timer message: UNIQ_KEY and TIMER_OUT_MS.
func identOf(props map[string]string) string {
	return props[message.PropUniqKey] + "@" + props[message.PropTimerOutMS]
}

// isWrittenBack reports whether a stored record is a timer message written
// back by dequeue_put, and returns its identity.
func isWrittenBack(rec []byte) (string, bool) {
	topic, err := message.PeekTopic(rec)
	if err != nil || topic == Topic {
		return "", false
	}
	raw, err := message.PeekProperties(rec)
	if err != nil {
		return "", false
	}
	if _, ok := message.LookupProperty(raw, message.PropTimerDequeueMS); !ok {
		return "", false
	}
	return identOf(message.DecodeProperties(raw)), true
}
