package broker

// Consumer offsets and queue bounds: QUERY_CONSUMER_OFFSET,
// UPDATE_CONSUMER_OFFSET, GET_MIN/MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP
// over remoting; GetOffset, UpdateOffset and QueryOffset over gRPC.

import (
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
)

// QueueRef names one queue of a topic.
type QueueRef struct {
	Topic   string
	QueueID int32
}

// ConsumerOffset answers group's committed offset of q; NotFound when the
// group never committed one and the queue no longer starts at 0 (like
// RocketMQ: a group that never committed starts at 0 while the queue still
// holds its first message, so nothing sent before its first start is
// skipped).
func (b *Broker) ConsumerOffset(c Caller, group string, q QueueRef, done func(int64, *Error)) {
	if err := b.authorize(c, consumeNeeds(group, q.Topic)...); err != nil {
		done(0, err)
		return
	}
	st, err := b.stageFor(offsets.StageName)
	if err != nil {
		done(0, err)
		return
	}
	st.Send(&offsets.Query{Group: group, Topic: q.Topic, QueueID: q.QueueID, FailFunc: failed("query offset", func(e *Error) { done(0, e) }),
		Reply: func(off int64, ok bool) {
			if !ok {
				cq := b.p.Store().Queues.Lookup(q.Topic, q.QueueID)
				if cq == nil || cq.MinOffset() > 0 || cq.MaxOffset() == 0 {
					done(0, Errorf(NotFound, "Not found, maybe this group consumer boot first"))
					return
				}
				off = 0
			}
			done(off, nil)
		}})
}

// CommitOffset stores group's committed offset of q (fire and forget: the
// offsets stage persists its table on its own schedule).
func (b *Broker) CommitOffset(c Caller, group string, q QueueRef, offset int64) *Error {
	if err := b.authorize(c, consumeNeeds(group, q.Topic)...); err != nil {
		return err
	}
	st, err := b.stageFor(offsets.StageName)
	if err != nil {
		return err
	}
	st.Send(&offsets.Commit{Group: group, Topic: q.Topic, QueueID: q.QueueID, Offset: offset})
	return nil
}

// QueueBounds answers q's first and next offsets (0, 0 for an unknown
// queue), from the consume queue's atomics.
func (b *Broker) QueueBounds(c Caller, q QueueRef) (minOff, maxOff int64, err *Error) {
	if err := b.authorize(c, Need{Kind: KindTopic, Name: q.Topic, Perm: Sub}); err != nil {
		return 0, 0, err
	}
	if cq := b.p.Store().Queues.Lookup(q.Topic, q.QueueID); cq != nil {
		return cq.MinOffset(), cq.MaxOffset(), nil
	}
	return 0, 0, nil
}

// OffsetAt answers the first offset of q stored at or after ts (ms).
func (b *Broker) OffsetAt(c Caller, q QueueRef, ts int64, done func(int64, *Error)) {
	if err := b.authorize(c, Need{Kind: KindTopic, Name: q.Topic, Perm: Sub}); err != nil {
		done(0, err)
		return
	}
	st, err := b.stageFor(pull.StageName)
	if err != nil {
		done(0, err)
		return
	}
	st.Send(&pull.SearchByTime{Topic: q.Topic, QueueID: q.QueueID, Timestamp: ts,
		FailFunc: failed("search offset", func(e *Error) { done(0, e) }), Reply: func(off int64) { done(off, nil) }})
}
