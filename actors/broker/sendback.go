package broker

// CONSUMER_SEND_MSG_BACK (36): a consumer gives a message back for a later
// retry. The broker reads the original from the CommitLog and stores a copy
// in %RETRY%<group> delayed by the retry's delay level (3 + reconsume times
// unless the client names one), or in %DLQ%<group> once the message has been
// retried maxReconsumeTimes times (or the client asks for it with a negative
// level). The delay runs on the timer wheel like any timer message.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// defaultMaxReconsumeTimes is RocketMQ's retryMaxTimes.
const defaultMaxReconsumeTimes = 16

func (b *Broker) handleSendBack(c *netloop.Conn, cmd *remoting.Command) {
	p := fieldParser{cmd: cmd}
	group := p.str("group")
	off := p.int("offset", true, 0)
	level := int(p.int("delayLevel", false, 0))
	maxTimes := int32(p.int("maxReconsumeTimes", false, defaultMaxReconsumeTimes))
	if e := p.err(); e != "" {
		b.reply(c, cmd, remoting.InvalidParameter, e)
		return
	}
	go b.sendBack(c, cmd, group, off, level, maxTimes) // CommitLog read: off the event loop
}

func (b *Broker) sendBack(c *netloop.Conn, cmd *remoting.Command, group string, off int64, level int, maxTimes int32) {
	raw, _, err := b.store.CommitLog.Read(off)
	if err != nil {
		b.reply(c, cmd, remoting.SystemError, fmt.Sprintf("look up message at offset %d: %v", off, err))
		return
	}
	orig, _, err := message.Decode(raw)
	if err != nil {
		b.reply(c, cmd, remoting.SystemError, fmt.Sprintf("decode message at offset %d: %v", off, err))
		return
	}
	props := message.DecodeProperties(orig.Properties)
	if _, ok := props[message.PropRetryTopic]; !ok {
		props[message.PropRetryTopic] = orig.Topic
	}
	if _, ok := props[message.PropOriginMessageID]; !ok {
		if id := cmd.Field("originMsgId"); id != "" {
			props[message.PropOriginMessageID] = id
		} else {
			props[message.PropOriginMessageID] = props[message.PropUniqKey]
		}
	}
	for _, k := range []string{message.PropTimerOutMS, message.PropRealTopic, message.PropRealQueueID,
		message.PropTimerDeliverMS, message.PropTimerDelaySec, message.PropTimerDelayMS,
		message.PropTimerEnqueueMS, message.PropTimerDequeueMS} {
		delete(props, k)
	}
	topic := meta.RetryTopic(group)
	if orig.ReconsumeTimes >= maxTimes || level < 0 {
		topic = meta.DLQTopic(group)
		delete(props, message.PropDelay)
	} else {
		if level == 0 {
			level = 3 + int(orig.ReconsumeTimes)
		}
		props[message.PropDelay] = strconv.Itoa(level)
	}
	props[message.PropMaxReconsumeTimes] = strconv.Itoa(int(maxTimes))
	b.ensureGroupTopic(topic)
	now := time.Now().UnixMilli()
	dest, queueID := topic, int32(0)
	plan := b.planTimer(props, now)
	if plan.code != 0 {
		b.reply(c, cmd, plan.code, plan.remark)
		return
	}
	if plan.timer {
		dest, queueID = toTimerTopic(props, plan, topic, 0)
	}
	rec := &message.Record{
		QueueID: queueID, Flag: orig.Flag, SysFlag: orig.SysFlag, BornTimestamp: orig.BornTimestamp,
		BornHost: orig.BornHost, StoreTimestamp: now, StoreHost: b.advertise, ReconsumeTimes: orig.ReconsumeTimes + 1,
		Body: orig.Body, Topic: dest, Properties: message.EncodeProperties(props),
	}
	enc, err := rec.Encode(nil)
	if err != nil {
		b.reply(c, cmd, remoting.MessageIllegal, fmt.Sprintf("retry message cannot be stored: %v", err))
		return
	}
	b.writerSt.Send(&writer.Append{Key: writer.QueueKey{Topic: dest, QueueID: queueID}, Records: [][]byte{enc},
		Reply: func(res writer.Result) {
			if res.Err != nil {
				b.reply(c, cmd, remoting.SystemError, res.Err.Error())
				return
			}
			b.reply(c, cmd, remoting.Success, "")
		}})
}
