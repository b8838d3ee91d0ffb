package router

// CONSUMER_SEND_MSG_BACK (36): a consumer gives a message back for a later
// retry. The broker reads the original from the CommitLog and stores a copy
// in %RETRY%<group> (a random one of the group's retryQueueNums queues)
// delayed by the level the client names, else by the group's retry policy
// (groupRetryPolicy, meta.RetryPolicy: to the millisecond, with its jitter;
// a group that set none keeps delay level 3 + reconsume times, which the
// default policy equals), or in %DLQ%<group> once the message has been retried
// maxReconsumeTimes times (the request's, else the group's retryMaxTimes,
// as RocketMQ reads them) or the client asks for it with a negative level.
// A group with retryQueueNums 0 drops the message (SUCCESS). The delay runs
// on the timer wheel like any timer message.

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (r *Router) handleSendBack(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("group")
	off := p.int("offset", true, 0)
	level := int(p.int("delayLevel", false, 0))
	maxTimes := int32(p.intBits("maxReconsumeTimes", false, -1, 32))
	if ref := p.refusal(); ref != nil {
		return ref
	}
	gc, err := r.groupConfig(group)
	if err != nil {
		return refuse(remoting.SubscriptionGroupNotExist, "subscription group not exist, %s", group)
	}
	if gc.RetryQueueNums <= 0 {
		r.reply(c, cmd, remoting.Success, "") // RocketMQ drops it: the group wants no retries
		return nil
	}
	if cmd.Field("maxReconsumeTimes") == "" {
		maxTimes = gc.RetryMaxTimes
	}
	if ref := r.diskFull(); ref != nil {
		return ref
	}
	// Reading the CommitLog is file I/O: the pull stage does it.
	r.pullSt.Send(&pull.ReadAt{Offset: off, Reply: func(raw []byte, err error) {
		if ref := r.sendBack(c, cmd, group, off, raw, err, level, maxTimes, gc.RetryQueueNums, gc.RetryPolicy()); ref != nil {
			r.refuse(c, cmd, ref)
		}
	}})
	return nil
}

// sendBack stores the retry (or dead-letter) copy of the message read at
// off; it runs on the pull stage, with the record it read.
func (r *Router) sendBack(c *netloop.Conn, cmd *remoting.Command, group string, off int64, raw []byte, err error,
	level int, maxTimes, retryQueues int32, policy meta.RetryPolicy) *Refusal {
	if err != nil {
		return refuse(remoting.SystemError, "look up message at offset %d: %v", off, err)
	}
	orig, _, err := message.Decode(raw)
	if err != nil {
		return refuse(remoting.SystemError, "decode message at offset %d: %v", off, err)
	}
	if ref := r.deferredCheck(c, cmd, orig.Topic); ref != nil {
		return ref // else SUB on a group would read any message through it
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
	topic, queueID := meta.RetryTopic(group), r.retryQueue(group, retryQueues)
	now := time.Now().UnixMilli()
	delete(props, message.PropDelay)
	switch {
	case orig.ReconsumeTimes >= maxTimes || level < 0:
		topic, queueID = meta.DLQTopic(group), 0
	case level == 0 && !policy.Default:
		// The group's retry policy, to the millisecond on the timer wheel.
		delay := policy.Delay(orig.ReconsumeTimes, rand.Float64())
		props[message.PropTimerDeliverMS] = strconv.FormatInt(now+delay.Milliseconds(), 10)
	case level == 0:
		props[message.PropDelay] = strconv.Itoa(3 + int(orig.ReconsumeTimes)) // the default policy's delay level
	default:
		props[message.PropDelay] = strconv.Itoa(level)
	}
	props[message.PropMaxReconsumeTimes] = strconv.Itoa(int(maxTimes))
	if meta.IsDLQTopic(topic) {
		r.p.EnsureGroupTopic(topic, nil)
	} else {
		r.p.EnsureGroupTopicQueues(topic, retryQueues, nil)
	}
	dest := topic
	plan := r.planTimer(props, now)
	if plan.code != 0 {
		return &Refusal{Code: plan.code, Remark: plan.remark}
	}
	if plan.timer {
		dest, queueID = toTimerTopic(props, plan, topic, queueID)
	}
	rec := &message.Record{
		QueueID: queueID, Flag: orig.Flag, SysFlag: orig.SysFlag, BornTimestamp: orig.BornTimestamp,
		BornHost: orig.BornHost, StoreTimestamp: now, StoreHost: r.core.Advertise(), ReconsumeTimes: orig.ReconsumeTimes + 1,
		Body: orig.Body, Topic: dest, Properties: message.EncodeProperties(props),
	}
	enc, err := rec.Encode(nil)
	if err != nil {
		return refuse(remoting.MessageIllegal, "retry message cannot be stored: %v", err)
	}
	r.appends.Push(&writer.Append{Key: writer.QueueKey{Topic: dest, QueueID: queueID}, Records: [][]byte{enc},
		Kind: stats.KindRetry, Topic: topic,
		Reply: func(res writer.Result) {
			if res.Err != nil {
				r.reply(c, cmd, remoting.SystemError, res.Err.Error())
				return
			}
			r.reply(c, cmd, remoting.Success, "")
		}})
	return nil
}

// retryQueue picks a random queue of the group's %RETRY% topic among its
// retryQueueNums queues (those the topic has, when it was made smaller).
func (r *Router) retryQueue(group string, retryQueues int32) int32 {
	n := retryQueues
	if cfg, ok := r.topicView.Get(meta.RetryTopic(group)); ok {
		n = min(n, cfg.WriteQueueNums)
	}
	if n <= 1 {
		return 0
	}
	return rand.Int32N(n)
}
