package broker

// CANCEL_TIMER_MESSAGE (3501, a wheelmq extension used by wheelctl cancel):
// cancel a pending timer message by the offset message id its send returned
// (SendResult.OffsetMsgID, the id of its copy in rmq_sys_wheel_timer).
//
// The broker reads that copy, and stores a cancel exactly as RocketMQ's
// TIMER_DEL_UNIQKEY cancel messages are: same due time, key
// "<realTopic>+<uniqKey>". Answers: 0 cancelled; 22 QUERY_NOT_FOUND when the
// id names no timer message; 13 when it is already due.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func (b *Broker) handleCancelTimer(c *netloop.Conn, cmd *remoting.Command) {
	id := cmd.Field("msgId")
	_, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		b.reply(c, cmd, remoting.InvalidParameter, fmt.Sprintf("msgId %q: %v", id, err))
		return
	}
	// Reading the CommitLog is file I/O: do it off the event loop.
	go b.cancelTimer(c, cmd, id, off)
}

func (b *Broker) cancelTimer(c *netloop.Conn, cmd *remoting.Command, id string, off int64) {
	rec, _, err := b.store.CommitLog.Read(off)
	if err != nil {
		b.reply(c, cmd, remoting.QueryNotFound, fmt.Sprintf("no message at %s: %v", id, err))
		return
	}
	r, _, err := message.Decode(rec)
	if err != nil || r.Topic != timer.Topic {
		b.reply(c, cmd, remoting.QueryNotFound, fmt.Sprintf("%s is not a pending timer message", id))
		return
	}
	props := message.DecodeProperties(r.Properties)
	if _, isCancel := props[message.PropTimerDelUniqKey]; isCancel {
		b.reply(c, cmd, remoting.InvalidParameter, fmt.Sprintf("%s is itself a cancel", id))
		return
	}
	due, err := strconv.ParseInt(props[message.PropTimerOutMS], 10, 64)
	if err != nil {
		b.reply(c, cmd, remoting.QueryNotFound, fmt.Sprintf("%s has no due time", id))
		return
	}
	now := time.Now().UnixMilli()
	if due <= now {
		b.reply(c, cmd, remoting.MessageIllegal, fmt.Sprintf("timer message %s was due at %d and is already delivered", id, due))
		return
	}
	realTopic, uniq := props[message.PropRealTopic], props[message.PropUniqKey]
	cancel := map[string]string{
		message.PropTimerDelUniqKey: realTopic + "+" + uniq,
		message.PropUniqKey:         uniq,
		message.PropTimerOutMS:      strconv.FormatInt(due, 10),
		message.PropRealTopic:       realTopic,
		message.PropRealQueueID:     props[message.PropRealQueueID],
		message.PropCluster:         b.cfg.Cluster,
	}
	out := &message.Record{
		QueueID: 0, BornTimestamp: now, BornHost: c.RemoteAddrPort(), StoreTimestamp: now, StoreHost: b.advertise,
		Body: []byte("0"), Topic: timer.Topic, Properties: message.EncodeProperties(cancel),
	}
	enc, err := out.Encode(nil)
	if err != nil {
		b.reply(c, cmd, remoting.SystemError, fmt.Sprintf("encode cancel: %v", err))
		return
	}
	b.writerSt.Send(&writer.Append{Key: writer.QueueKey{Topic: timer.Topic}, Records: [][]byte{enc},
		Reply: func(res writer.Result) {
			if res.Err != nil {
				b.reply(c, cmd, remoting.SystemError, res.Err.Error())
				return
			}
			b.cfg.Logger.Info().Str("msg_id", id).Str("topic", realTopic).Str("uniq_key", uniq).Int64("due_ms", due).
				Msg("timer message cancelled by admin request")
			b.reply(c, cmd, remoting.Success, "")
		}})
}
