package grpcgw

// A SendMessage of several messages as one broker call: RocketMQ's proxy
// sends such a request as one message batch (one queue, consecutive
// offsets, one CommitLog append). Only messages a batch can carry go that
// way: plain (NORMAL) messages of one topic, with no delivery time, no
// message group and no transaction; any other mix is sent one call per
// message (send.go).

import (
	"context"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/storage/message"
)

// batchable reports whether msgs can be stored as one batch.
func batchable(msgs []*v2.Message) bool {
	if len(msgs) < 2 {
		return false
	}
	topic := msgs[0].GetTopic().GetName()
	for _, m := range msgs {
		sp := m.GetSystemProperties()
		if m.GetTopic().GetName() != topic || sp.GetMessageType() != v2.MessageType_NORMAL ||
			sp.GetDeliveryTimestamp() != nil || sp.GetMessageGroup() != "" {
			return false
		}
	}
	return true
}

// sendBatch stores msgs (batchable) in one broker call and answers each
// message's entry: its message id and its queue offset. A refusal of one
// message refuses the batch, as RocketMQ's does.
func (g *Gateway) sendBatch(ctx context.Context, s *session, msgs []*v2.Message) *v2.SendMessageResponse {
	fail := func(st *v2.Status) *v2.SendMessageResponse {
		out := &v2.SendMessageResponse{Status: st}
		for _, m := range msgs {
			out.Entries = append(out.Entries, &v2.SendResultEntry{Status: st, MessageId: m.GetSystemProperties().GetMessageId()})
		}
		return out
	}
	core := g.opts.Broker
	if core == nil {
		return fail(noCore())
	}
	entries := make([]message.BatchEntry, len(msgs))
	var born int64
	for i, m := range msgs {
		f, st := fromMessage(m)
		if st != nil {
			return fail(st)
		}
		if i == 0 {
			born = f.born
		}
		entries[i] = message.BatchEntry{Body: m.GetBody(), Properties: message.EncodeProperties(f.props)}
	}
	body, err := message.EncodeBatch(entries)
	if err != nil {
		return fail(statusf(v2.Code_BAD_REQUEST, "%v", err))
	}
	topic := msgs[0].GetTopic().GetName()
	type answer struct {
		res *broker.SendResult
		err *broker.Error
	}
	got := make(chan answer, 1)
	core.Send(g.callerOf(ctx, s), &broker.SendRequest{
		ProducerGroup: topic, Topic: topic, DefaultTopic: broker.AutoCreateTopic, DefaultQueueNums: int32(g.opts.DefaultQueueNums),
		QueueID: -1, BornTimestamp: born, Batch: true, Body: body,
	}, func(res *broker.SendResult, err *broker.Error) { got <- answer{res, err} })
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		return fail(statusf(v2.Code_PROXY_TIMEOUT, "send: %v", ctx.Err()))
	}
	if a.err != nil {
		return fail(fromBroker(a.err))
	}
	out := &v2.SendMessageResponse{Status: okStatus()}
	for i, m := range msgs {
		out.Entries = append(out.Entries, &v2.SendResultEntry{Status: okStatus(),
			MessageId: m.GetSystemProperties().GetMessageId(), Offset: a.res.QueueOffset + int64(i)})
	}
	return out
}
