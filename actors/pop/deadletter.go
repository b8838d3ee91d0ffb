package pop

import (
	"fmt"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// A delivery that expires after the group's max attempts (its
// retryMaxTimes + 1: 17 by default, as RocketMQ counts for the v5 SDKs) is
// not offered again: the stage copies the message to the group's %DLQ%
// topic (RETRY_TOPIC, ORIGIN_MESSAGE_ID and MAX_RECONSUME_TIMES set, as a
// send-back to the DLQ does) and, once that is stored, acks it. Until then
// the offset is neither in flight nor visible; if the copy fails it
// becomes visible again and the next expiry tries again. A crash between
// the copy and the ack copies it once more (at least once).

// deadLettered is the outcome of a copy to the DLQ.
type deadLettered struct {
	key     qkey
	off     int64
	attempt int32
	err     error
	reply   func(code int32, remark string) // a DeadLetter's caller (nil: an expiry)
}

// DeadLetter moves a live delivery to its group's DLQ now, as its max
// attempts would (ForwardMessageToDeadLetterQueue): one request, the copy
// then the ack; Reply hears CodeSuccess once both are done, CodeNoMessage
// for a handle that is not live, or the failure (the delivery is then
// offered again).
type DeadLetter struct {
	Group, Topic string
	Handle       Handle
	Reply        func(code int32, remark string)
	stage.FailFunc
}

// forward serves a DeadLetter.
func (e *Engine) forward(m *DeadLetter) {
	k, s, ok := e.live(m.Group, m.Topic, m.Handle)
	if !ok {
		e.m.Refused.Add(1)
		m.Reply(CodeNoMessage, remarkExpired)
		return
	}
	d := s.inflight[m.Handle.Offset]
	delete(s.inflight, m.Handle.Offset)
	e.inflight.Add(-1)
	e.modes.Done(k.group, k.topic)
	e.deadLetterReply(k, m.Handle.Offset, d.attempt, m.Reply)
}

// maxAttempts is how many deliveries the group's messages get.
func (e *Engine) maxAttempts(group string) int32 {
	if e.opts.MaxAttempts == nil {
		return meta.DefaultRetryMaxTimes + 1
	}
	return e.opts.MaxAttempts(group)
}

// deadLetter copies the message of k at off, delivered attempt times, to
// the group's DLQ; the stage hears back with deadLettered.
func (e *Engine) deadLetter(k qkey, off int64, attempt int32) {
	e.deadLetterReply(k, off, attempt, nil)
}

// deadLetterReply is deadLetter telling reply (if set) the outcome.
func (e *Engine) deadLetterReply(k qkey, off int64, attempt int32, reply func(int32, string)) {
	e.dlqPending++ // holds the journal's replay start (compact.go)
	fail := func(err error) {
		e.deadLettered(&deadLettered{key: k, off: off, attempt: attempt, err: err, reply: reply})
	}
	cq := e.opts.Store.Queues.Lookup(k.topic, k.queue)
	if cq == nil {
		fail(fmt.Errorf("pop dlq: no consume queue %s:%d", k.topic, k.queue))
		return
	}
	units, err := cq.Read(off, 1)
	if err != nil || len(units) == 0 || units[0].IsHole() {
		fail(fmt.Errorf("pop dlq: read %s:%d offset %d: %v", k.topic, k.queue, off, err))
		return
	}
	raw, err := e.opts.Store.CommitLog.ReadAt(units[0].Offset, units[0].Size)
	if err != nil {
		fail(fmt.Errorf("pop dlq: read commitlog offset %d: %w", units[0].Offset, err))
		return
	}
	enc, err := dlqRecord(raw, k, attempt, e.maxAttempts(k.group), e.opts.Now().UnixMilli())
	if err != nil {
		fail(err)
		return
	}
	dlq := meta.DLQTopic(k.group)
	self := e.self
	back := func(err error) {
		if self != nil {
			self.Send(&deadLettered{key: k, off: off, attempt: attempt, err: err, reply: reply})
		}
	}
	appendIt := func(err error) {
		if err != nil {
			back(fmt.Errorf("pop dlq: create %s: %w", dlq, err))
			return
		}
		e.opts.Append(&writer.Append{Key: writer.QueueKey{Topic: dlq}, Records: [][]byte{enc}, Kind: stats.KindDLQ, Reply: func(res writer.Result) {
			if res.Err != nil {
				back(fmt.Errorf("pop dlq: append to %s: %w", dlq, res.Err))
				return
			}
			back(nil)
		}})
	}
	if e.opts.Append == nil {
		fail(fmt.Errorf("pop dlq: no writer"))
		return
	}
	if e.opts.EnsureTopic == nil {
		appendIt(nil)
		return
	}
	e.opts.EnsureTopic(dlq, appendIt)
}

// dlqRecord is raw as stored in the DLQ of k's group.
func dlqRecord(raw []byte, k qkey, attempt, maxAttempts int32, nowMs int64) ([]byte, error) {
	r, _, err := message.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("pop dlq: decode: %w", err)
	}
	props := message.DecodeProperties(r.Properties)
	if _, ok := props[message.PropRetryTopic]; !ok {
		props[message.PropRetryTopic] = k.topic
	}
	if _, ok := props[message.PropOriginMessageID]; !ok {
		props[message.PropOriginMessageID] = props[message.PropUniqKey]
	}
	props[message.PropMaxReconsumeTimes] = strconv.Itoa(int(maxAttempts - 1))
	for _, p := range []string{message.PropTimerOutMS, message.PropRealTopic, message.PropRealQueueID,
		message.PropTimerDeliverMS, message.PropTimerDelaySec, message.PropTimerDelayMS, message.PropDelay,
		message.PropTimerEnqueueMS, message.PropTimerDequeueMS, PropPopCK} {
		delete(props, p)
	}
	out := message.Record{Topic: meta.DLQTopic(k.group), QueueID: 0, Flag: r.Flag, SysFlag: r.SysFlag,
		BornTimestamp: r.BornTimestamp, BornHost: r.BornHost, StoreTimestamp: nowMs, StoreHost: r.StoreHost,
		ReconsumeTimes: attempt, Body: r.Body, Properties: message.EncodeProperties(props)}
	b, err := out.Encode(nil)
	if err != nil {
		return nil, fmt.Errorf("pop dlq: encode: %w", err)
	}
	return b, nil
}

// deadLettered acks a message copied to the DLQ, or makes it visible
// again when the copy failed.
func (e *Engine) deadLettered(m *deadLettered) {
	e.dlqPending = max(e.dlqPending-1, 0)
	reply := m.reply
	if reply == nil {
		reply = func(int32, string) {}
	}
	s := e.queues[m.key]
	if s == nil {
		reply(CodeSystemError, "pop: the queue's state is gone")
		return
	}
	log := e.opts.Logger.With().Str("group", m.key.group).Str("topic", m.key.topic).Int32("queue", m.key.queue).
		Int64("offset", m.off).Int32("attempts", m.attempt).Logger()
	if m.err != nil {
		log.Error().Err(m.err).Msg("pop: message not moved to the dead-letter queue; it is offered again")
		s.visible[m.off] = m.attempt + 1
		s.visibleJOff[m.off] = 0 // its entry is unknown here: hold the replay start
		reply(CodeSystemError, m.err.Error())
		return
	}
	if s.ack(m.off) {
		e.commit(m.key, s)
	}
	e.m.DeadLettered.Add(1)
	log.Info().Str("dlq", meta.DLQTopic(m.key.group)).Msg("pop: message moved to the dead-letter queue (max attempts, or the consumer asked)")
	e.record([]entry{{kind: 'A', key: m.key, off: m.off}}, func(err error) {
		if err != nil {
			log.Error().Err(err).Msg("pop journal: dead-letter ack not stored (the message may be copied again after a restart)")
			reply(failCode(err), err.Error())
			return
		}
		reply(CodeSuccess, "")
	})
}
