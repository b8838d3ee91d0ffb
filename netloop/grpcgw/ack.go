package grpcgw

// AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue,
// through the broker API in process: the N entries of an AckMessage are
// one call (one request to the POP engine, one journal append).

import (
	"context"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pop"
)

// await waits for a broker call's answer, or ctx's end (INTERNAL: the
// call's outcome is unknown to the client, which retries or lets the
// delivery expire).
func await[T any](ctx context.Context, got <-chan T) (T, *v2.Status) {
	select {
	case v := <-got:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, statusf(v2.Code_INTERNAL_SERVER_ERROR, "the broker did not answer in time: %v", context.Cause(ctx))
	}
}

// handleStatus decodes a client's receipt handle (the engine decides
// whether it is still live).
func handleStatus(h string) (receipt, *v2.Status) {
	r, err := parseClientHandle(h)
	if err != nil {
		return r, statusf(v2.Code_INVALID_RECEIPT_HANDLE, "receipt handle is malformed")
	}
	return r, nil
}

// handleError maps a broker refusal of an ack or change: a malformed or
// dead handle is INVALID_RECEIPT_HANDLE.
func handleError(err *broker.Error) *v2.Status {
	if err.Status == broker.BadRequest || err.Status == broker.HandleExpired || err.Status == broker.Conflict {
		msg := err.Remark
		if msg == "" {
			msg = "receipt handle is invalid"
		}
		return &v2.Status{Code: v2.Code_INVALID_RECEIPT_HANDLE, Message: msg}
	}
	return fromBroker(err)
}

// AckMessage acks the entries in one broker call; the top status is OK,
// the entries' common failure, or MULTIPLE_RESULTS.
func (g *Gateway) AckMessage(ctx context.Context, req *v2.AckMessageRequest) (*v2.AckMessageResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.AckMessageResponse{Status: st}, nil
	}
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if g.opts.Broker == nil {
		return &v2.AckMessageResponse{Status: noCore()}, nil
	}
	entries := req.GetEntries()
	sts := make([]*v2.Status, len(entries))
	areq := &broker.AckRequest{Group: group, Topic: topic}
	var at []int // index in entries of each areq entry
	for i, e := range entries {
		if h := e.GetReceiptHandle(); broker.IsLiteHandle(h) {
			sts[i] = g.liteAck(ctx, s, group, h) // lite.go
			continue
		}
		r, st := handleStatus(s.renew.take(e.GetReceiptHandle()))
		if st != nil {
			sts[i] = st
			continue
		}
		areq.Entries = append(areq.Entries, broker.AckEntry{Handle: r.handle()})
		at = append(at, i)
	}
	if len(areq.Entries) > 0 {
		type answer struct {
			res *broker.AckResult
			err *broker.Error
		}
		got := make(chan answer, 1)
		g.opts.Broker.Ack(g.callerOf(ctx, s), areq, func(res *broker.AckResult, err *broker.Error) { got <- answer{res, err} })
		a, st := await(ctx, got)
		for k, i := range at {
			switch {
			case st != nil:
				sts[i] = st
			case a.err != nil:
				sts[i] = handleError(a.err)
			case a.res.Refused[k] != nil:
				sts[i] = handleError(a.res.Refused[k])
			default:
				sts[i] = okStatus()
			}
		}
	}
	out := &v2.AckMessageResponse{}
	var failed, okN int
	for i, e := range entries {
		if sts[i].GetCode() == v2.Code_OK {
			okN++
		} else {
			failed++
			if out.Status == nil {
				out.Status = sts[i]
			}
		}
		out.Entries = append(out.Entries, &v2.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle(), Status: sts[i]})
	}
	switch {
	case failed == 0:
		out.Status = okStatus()
	case okN > 0:
		out.Status = statusf(v2.Code_MULTIPLE_RESULTS, "%d of %d acks failed", failed, failed+okN)
	}
	return out, nil
}

// change moves the invisibility of the delivery r names to d and returns
// the client's new handle.
func (g *Gateway) change(ctx context.Context, c broker.Caller, group, topic string, r receipt, d time.Duration) (string, *v2.Status) {
	if g.opts.Broker == nil {
		return "", noCore()
	}
	type answer struct {
		h   pop.Handle
		err *broker.Error
	}
	got := make(chan answer, 1)
	g.opts.Broker.ChangeInvisible(c, &broker.ChangeRequest{Group: group, Topic: topic, Handle: r.handle(), Invisible: d},
		func(h pop.Handle, err *broker.Error) { got <- answer{h, err} })
	a, st := await(ctx, got)
	if st != nil {
		return "", st
	}
	if a.err != nil {
		return "", handleError(a.err)
	}
	return clientHandle(a.h.String(), r.clOffset), nil
}

// ChangeInvisibleDuration moves a message's invisibility deadline and
// answers the new handle (the old one is dead from then on).
func (g *Gateway) ChangeInvisibleDuration(ctx context.Context, req *v2.ChangeInvisibleDurationRequest) (*v2.ChangeInvisibleDurationResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if h := req.GetReceiptHandle(); broker.IsLiteHandle(h) {
		nh, st := g.liteChange(ctx, s, group, h, req.GetInvisibleDuration().AsDuration(), req.GetSuspend()) // lite.go
		return &v2.ChangeInvisibleDurationResponse{Status: st, ReceiptHandle: nh}, nil
	}
	r, st := handleStatus(s.renew.take(req.GetReceiptHandle()))
	if st != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	nh, st := g.change(ctx, g.callerOf(ctx, s), group, topic, r, req.GetInvisibleDuration().AsDuration())
	if st != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	return &v2.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: nh}, nil
}

// ForwardMessageToDeadLetterQueue moves the message to %DLQ%<group> and
// acks it, in one broker call (the copy is stored before the ack).
func (g *Gateway) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2.ForwardMessageToDeadLetterQueueRequest) (*v2.ForwardMessageToDeadLetterQueueResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if g.opts.Broker == nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: noCore()}, nil
	}
	if h := req.GetReceiptHandle(); broker.IsLiteHandle(h) {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: g.liteAck(ctx, s, group, h)}, nil // lite.go
	}
	r, st := handleStatus(s.renew.take(req.GetReceiptHandle()))
	if st != nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	got := make(chan *broker.Error, 1)
	g.opts.Broker.ForwardToDeadLetter(g.callerOf(ctx, s), group, topic, r.handle(), func(err *broker.Error) { got <- err })
	err, st := await(ctx, got)
	switch {
	case st != nil:
	case err != nil:
		st = handleError(err)
	default:
		st = okStatus()
	}
	return &v2.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
}
