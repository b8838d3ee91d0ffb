package broker

// CONSUMER_SEND_MSG_BACK (36): a consumer gives a message back for a later
// retry. The broker reads the original from the CommitLog and stores a copy
// in %RETRY%<group> (a random one of the group's retryQueueNums queues)
// delayed by the level the client names, else by the group's retry policy
// (meta.RetryPolicy: to the millisecond, with its jitter; a group that set
// none keeps delay level 3 + reconsume times, which the default policy
// equals), or in %DLQ%<group> once the message has been retried
// maxReconsumeTimes times (the request's, else the group's retryMaxTimes,
// as RocketMQ reads them) or the client asks for it with a negative level.
// A group with retryQueueNums 0 drops the message (OK). The delay runs on
// the timer wheel like any timer message.

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// SendBackRequest is one CONSUMER_SEND_MSG_BACK.
type SendBackRequest struct {
	Group string
	// CommitLogOffset is where the message given back is stored.
	CommitLogOffset int64
	// DelayLevel is the client's delay level: 0 the group's retry
	// policy, a negative one straight to the dead-letter queue.
	DelayLevel int
	// MaxReconsumeTimes is the client's limit when HasMax (else the
	// group's retryMaxTimes).
	MaxReconsumeTimes int32
	HasMax            bool
	// OriginMsgID is the client's originMsgId ("": the message's own).
	OriginMsgID string
	// Authorize, when set, decides whether the caller may give back a
	// message of topic (a codec's own deferred ACL check); without it
	// the broker's ACL decides (SUB on that topic).
	Authorize func(topic string) *Error
}

// SendBack stores the retry (or dead-letter) copy of the message at
// req.CommitLogOffset. done runs on the writer's goroutine, the pull
// stage's, or the caller's for a refusal.
func (b *Broker) SendBack(c Caller, req SendBackRequest, done func(*Error)) {
	gc, err := b.GroupConfig(req.Group)
	if err != nil {
		done(err)
		return
	}
	if gc.RetryQueueNums <= 0 {
		done(nil) // RocketMQ drops it: the group wants no retries
		return
	}
	if !req.HasMax {
		req.MaxReconsumeTimes = gc.RetryMaxTimes
	}
	if err := b.DiskFull(); err != nil {
		done(err)
		return
	}
	st, err := b.stageFor(pull.StageName)
	if err != nil {
		done(err)
		return
	}
	// Reading the CommitLog is file I/O: the pull stage does it.
	st.Send(&pull.ReadAt{Offset: req.CommitLogOffset, Reply: func(raw []byte, rerr error) {
		if rerr != nil {
			done(Errorf(Internal, "look up message at offset %d: %v", req.CommitLogOffset, rerr))
			return
		}
		b.sendBack(c, req, gc, raw, done)
	}})
}

// sendBack stores the copy of raw, the record read at the request's
// offset; it runs on the pull stage.
func (b *Broker) sendBack(c Caller, req SendBackRequest, gc meta.SubscriptionGroupConfig, raw []byte, done func(*Error)) {
	orig, _, derr := message.Decode(raw)
	if derr != nil {
		done(Errorf(Internal, "decode message at offset %d: %v", req.CommitLogOffset, derr))
		return
	}
	// Else SUB on a group would read any message through it.
	authorized := b.authorize(c, Need{Kind: KindTopic, Name: orig.Topic, Perm: Sub})
	if req.Authorize != nil {
		authorized = req.Authorize(orig.Topic)
	}
	if authorized != nil {
		done(authorized)
		return
	}
	props := retryProps(&orig, req.OriginMsgID)
	topic, queueID := meta.RetryTopic(req.Group), b.retryQueue(req.Group, gc.RetryQueueNums)
	now := time.Now().UnixMilli()
	policy := gc.RetryPolicy()
	switch {
	case orig.ReconsumeTimes >= req.MaxReconsumeTimes || req.DelayLevel < 0:
		topic, queueID = meta.DLQTopic(req.Group), 0
	case req.DelayLevel == 0 && !policy.Default:
		// The group's retry policy, to the millisecond on the timer wheel.
		delay := policy.Delay(orig.ReconsumeTimes, rand.Float64())
		props[message.PropTimerDeliverMS] = strconv.FormatInt(now+delay.Milliseconds(), 10)
	case req.DelayLevel == 0:
		props[message.PropDelay] = strconv.Itoa(3 + int(orig.ReconsumeTimes)) // the default policy's delay level
	default:
		props[message.PropDelay] = strconv.Itoa(req.DelayLevel)
	}
	props[message.PropMaxReconsumeTimes] = strconv.Itoa(int(req.MaxReconsumeTimes))
	if meta.IsDLQTopic(topic) {
		b.p.EnsureGroupTopic(topic, nil)
	} else {
		b.p.EnsureGroupTopicQueues(topic, gc.RetryQueueNums, nil)
	}
	dest := topic
	plan, perr := b.PlanTimer(props, now)
	if perr != nil {
		done(perr)
		return
	}
	if plan.Timer {
		dest, queueID = timer.ToTimerTopic(props, plan.DueMs, topic, queueID)
	}
	rec := &message.Record{
		QueueID: queueID, Flag: orig.Flag, SysFlag: orig.SysFlag, BornTimestamp: orig.BornTimestamp,
		BornHost: orig.BornHost, StoreTimestamp: now, StoreHost: b.Advertise(), ReconsumeTimes: orig.ReconsumeTimes + 1,
		Body: orig.Body, Topic: dest, Properties: message.EncodeProperties(props),
	}
	enc, eerr := rec.Encode(nil)
	if eerr != nil {
		done(Errorf(IllegalMessage, "retry message cannot be stored: %v", eerr))
		return
	}
	b.send.appends.Push(&writer.Append{Key: writer.QueueKey{Topic: dest, QueueID: queueID}, Records: [][]byte{enc},
		Kind: stats.KindRetry, Topic: topic,
		Reply: func(res writer.Result) {
			if res.Err != nil {
				done(&Error{Status: Internal, Remark: res.Err.Error(), Err: res.Err})
				return
			}
			done(nil)
		}})
}

// retryProps is the properties of a retry copy of orig: its retry topic
// and origin message id kept (set when missing), its timer and delay
// bookkeeping dropped.
func retryProps(orig *message.Record, originMsgID string) map[string]string {
	props := message.DecodeProperties(orig.Properties)
	if _, ok := props[message.PropRetryTopic]; !ok {
		props[message.PropRetryTopic] = orig.Topic
	}
	if _, ok := props[message.PropOriginMessageID]; !ok {
		if originMsgID != "" {
			props[message.PropOriginMessageID] = originMsgID
		} else {
			props[message.PropOriginMessageID] = props[message.PropUniqKey]
		}
	}
	for _, k := range []string{message.PropTimerOutMS, message.PropRealTopic, message.PropRealQueueID,
		message.PropTimerDeliverMS, message.PropTimerDelaySec, message.PropTimerDelayMS,
		message.PropTimerEnqueueMS, message.PropTimerDequeueMS, message.PropDelay} {
		delete(props, k)
	}
	return props
}

// retryQueue picks a random queue of the group's %RETRY% topic among its
// retryQueueNums queues (those the topic has, when it was made smaller).
func (b *Broker) retryQueue(group string, retryQueues int32) int32 {
	n := retryQueues
	if cfg, ok := b.p.Topics().Get(meta.RetryTopic(group)); ok {
		n = min(n, cfg.WriteQueueNums)
	}
	if n <= 1 {
		return 0
	}
	return rand.Int32N(n)
}
