package timer

import (
	"strconv"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// rebuild reads a due timer's message and rebuilds it for its real topic
// and queue, as RocketMQ's dequeue does: REAL_TOPIC/REAL_QID name the
// destination, TIMER_ENQUEUE_MS and TIMER_DEQUEUE_MS are added, DELAY is
// removed; body, flags, born and store hosts, reconsume times and UNIQ_KEY
// are kept. reason is non-empty when the message cannot be delivered.
func rebuild(st *storage.Store, t timerwheel.Timer, nowMs int64) (put, string) {
	raw, err := st.CommitLog.ReadAt(t.CommitLogOffset, t.Size)
	if err != nil {
		return put{}, "unreadable"
	}
	r, _, err := message.Decode(raw)
	if err != nil {
		return put{}, "undecodable"
	}
	props := message.DecodeProperties(r.Properties)
	topic := props[message.PropRealTopic]
	qid, err := strconv.ParseInt(props[message.PropRealQueueID], 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return put{}, "no_real_topic"
	}
	props[message.PropTimerEnqueueMS] = strconv.FormatInt(t.AddedMs, 10)
	props[message.PropTimerDequeueMS] = strconv.FormatInt(nowMs, 10)
	delete(props, message.PropDelay)
	out := &message.Record{
		QueueID: int32(qid), Flag: r.Flag, SysFlag: r.SysFlag, BornTimestamp: r.BornTimestamp, BornHost: r.BornHost,
		StoreTimestamp: nowMs, StoreHost: r.StoreHost, ReconsumeTimes: r.ReconsumeTimes,
		PreparedTransactionOffset: r.PreparedTransactionOffset,
		Body:                      r.Body, Topic: topic, Properties: message.EncodeProperties(props),
	}
	rec, err := out.Encode(make([]byte, 0, out.EncodedSize()))
	if err != nil {
		return put{}, "unencodable"
	}
	return put{
		key:    writer.QueueKey{Topic: topic, QueueID: int32(qid)},
		record: rec,
		ident:  identOf(props),
		due:    t.DeliverMs,
	}, ""
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
