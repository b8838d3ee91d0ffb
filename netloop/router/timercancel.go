package router

// CANCEL_TIMER_MESSAGE (3501, a wheelmq extension used by wheelctl cancel):
// cancel a pending timer message by the offset message id its send returned
// (SendResult.OffsetMsgID, the id of its copy in rmq_sys_wheel_timer).
//
// The broker reads that copy, and stores a cancel exactly as RocketMQ's
// TIMER_DEL_UNIQKEY cancel messages are: same due time, key
// "<realTopic>+<uniqKey>". Answers: 0 cancelled; 22 QUERY_NOT_FOUND when the
// id names no timer message; 13 when it is already due.

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func (r *Router) handleCancelTimer(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	id := cmd.Field("msgId")
	_, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return refuse(remoting.InvalidParameter, "msgId %q: %v", id, err)
	}
	// Reading the CommitLog is file I/O: the pull stage does it.
	r.pullSt.Send(&pull.ReadAt{Offset: off, Reply: func(rec []byte, err error) {
		if ref := r.cancelTimer(c, cmd, id, rec, err); ref != nil {
			r.refuse(c, cmd, ref)
		}
	}})
	return nil
}

// cancelTimer stores the cancel of the timer message read at the id's
// offset; it runs on the pull stage, with the record it read.
func (r *Router) cancelTimer(c *netloop.Conn, cmd *remoting.Command, id string, rec []byte, err error) *Refusal {
	if err != nil {
		return refuse(remoting.QueryNotFound, "no message at %s: %v", id, err)
	}
	tm, _, err := message.Decode(rec)
	if err != nil || tm.Topic != timer.Topic {
		return refuse(remoting.QueryNotFound, "%s is not a pending timer message", id)
	}
	props := message.DecodeProperties(tm.Properties)
	if _, isCancel := props[message.PropTimerDelUniqKey]; isCancel {
		return refuse(remoting.InvalidParameter, "%s is itself a cancel", id)
	}
	due, err := strconv.ParseInt(props[message.PropTimerOutMS], 10, 64)
	if err != nil {
		return refuse(remoting.QueryNotFound, "%s has no due time", id)
	}
	now := time.Now().UnixMilli()
	if due <= now {
		return refuse(remoting.MessageIllegal, "timer message %s was due at %d and is already delivered", id, due)
	}
	realTopic, uniq := props[message.PropRealTopic], props[message.PropUniqKey]
	if ref := r.deferredCheck(c, cmd, realTopic); ref != nil {
		return ref
	}
	cancel := map[string]string{
		message.PropTimerDelUniqKey: realTopic + "+" + uniq,
		message.PropUniqKey:         uniq,
		message.PropTimerOutMS:      strconv.FormatInt(due, 10),
		message.PropRealTopic:       realTopic,
		message.PropRealQueueID:     props[message.PropRealQueueID],
		message.PropCluster:         r.cfg.Cluster,
	}
	out := &message.Record{
		QueueID: 0, BornTimestamp: now, BornHost: c.RemoteAddrPort(), StoreTimestamp: now, StoreHost: r.core.Advertise(),
		Body: []byte("0"), Topic: timer.Topic, Properties: message.EncodeProperties(cancel),
	}
	enc, err := out.Encode(nil)
	if err != nil {
		return refuse(remoting.SystemError, "encode cancel: %v", err)
	}
	r.appends.Push(&writer.Append{Key: writer.QueueKey{Topic: timer.Topic}, Records: [][]byte{enc}, Kind: stats.KindSystem,
		Reply: func(res writer.Result) {
			if res.Err != nil {
				r.reply(c, cmd, remoting.SystemError, res.Err.Error())
				return
			}
			r.cfg.Logger.Info().Str("msg_id", id).Str("topic", realTopic).Str("uniq_key", uniq).Int64("due_ms", due).
				Msg("timer message cancelled by admin request")
			r.reply(c, cmd, remoting.Success, "")
		}})
	return nil
}
