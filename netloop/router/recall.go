package router

// RECALL_MESSAGE (370, RocketMQ 5.3.2+): withdraw a pending timer message
// by the recall handle its send answer carried (SendMessageResponseHeader
// field recallHandle, which answerSend sets for a timer message; the
// RocketMQ 5 SDKs' SendReceipt.RecallHandle).
//
// The handle is RocketMQ's RecallMessageHandle v1: base64url of
// "v1 <topic> <brokerName> <dueMs> <uniqKey>". As RocketMQ's
// RecallMessageProcessor, the broker checks the handle against the request
// (its topic, this broker's name, a due time still ahead and within the
// timer limit) and stores a cancel of that uniq key at that due time, the
// cancel record a TIMER_DEL_UNIQKEY send writes; the wheel drops the
// message when the cancel is applied. The answer's msgId is the uniq key.
// A handle that does not decode, names another topic or broker, or is
// already due: 604 ILLEGAL_OPERATION (RocketMQ's code and remarks). Recall
// of a message that was never sent or already cancelled succeeds and
// changes nothing, as in RocketMQ.

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func (r *Router) handleRecall(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	topic := cmd.Field("topic")
	if _, ok := r.topicView.Get(topic); !ok {
		return refuse(remoting.TopicNotExist, "recall failed, the topic[%s] not exist", topic)
	}
	h, err := remoting.ParseRecallHandle(cmd.Field("recallHandle"))
	switch {
	case err != nil:
		return refuse(remoting.IllegalOperation, "%v", err)
	case h.Topic != topic:
		return refuse(remoting.IllegalOperation, "recall failed, topic not match")
	case h.BrokerName != r.cfg.BrokerName:
		return refuse(remoting.IllegalOperation, "recall failed, broker service not available")
	}
	now := time.Now().UnixMilli()
	if left := h.DueMs - now; left <= 0 || left >= r.cfg.MaxTimerDelay.Milliseconds() {
		return refuse(remoting.IllegalOperation, "recall failed, timestamp invalid")
	}
	if ref := r.stagesDown(r.timerSts); ref != nil {
		return ref
	}
	cancel := map[string]string{
		message.PropTimerDelUniqKey: topic + "+" + h.Uniq,
		message.PropUniqKey:         h.Uniq,
		message.PropTimerOutMS:      strconv.FormatInt(h.DueMs, 10),
		message.PropRealTopic:       topic,
		message.PropRealQueueID:     "0",
		message.PropCluster:         r.cfg.Cluster,
	}
	out := &message.Record{
		QueueID: 0, BornTimestamp: now, BornHost: c.RemoteAddrPort(), StoreTimestamp: now, StoreHost: r.core.Advertise(),
		Body: []byte("0"), Topic: timer.Topic, Properties: message.EncodeProperties(cancel),
	}
	enc, err := out.Encode(nil)
	if err != nil {
		return refuse(remoting.SystemError, "recall failed, encode the cancel: %v", err)
	}
	r.appends.Push(&writer.Append{Key: writer.QueueKey{Topic: timer.Topic}, Records: [][]byte{enc}, Kind: stats.KindSystem,
		Reply: func(res writer.Result) {
			if res.Err != nil {
				code, remark := sendFailure(res.Err)
				r.reply(c, cmd, code, "recall failed, "+remark)
				return
			}
			r.cfg.Logger.Info().Str("topic", topic).Str("uniq_key", h.Uniq).Int64("due_ms", h.DueMs).
				Msg("timer message recalled")
			resp := remoting.NewResponse(cmd, remoting.Success, "")
			resp.SetField("msgId", h.Uniq)
			r.sendVia(res.Out, c, cmd, resp)
		}})
	return nil
}

// recallDue is the due time a send's answer names in its recall handle:
// that of a timer message stored for the wheel (topic is the timer topic
// after applyTimer), not of a cancel; 0 for anything else.
func recallDue(props map[string]string, topic string) int64 {
	if topic != timer.Topic {
		return 0
	}
	if _, cancel := props[message.PropTimerDelUniqKey]; cancel {
		return 0
	}
	due, err := strconv.ParseInt(props[message.PropTimerOutMS], 10, 64)
	if err != nil || due <= 0 {
		return 0
	}
	return due
}
