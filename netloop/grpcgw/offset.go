package grpcgw

// The offset RPCs (for pull consumers; the Go and Node SDKs do not send
// them), through the broker API in process, and the RPCs left out.

import (
	"context"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
)

// offsetCall runs the checks of an offset RPC (the session, the broker
// API) and returns the Caller.
func (g *Gateway) offsetCall(ctx context.Context) (broker.Caller, *v2.Status) {
	s, st := g.session(ctx)
	if st != nil {
		return broker.Caller{}, st
	}
	if g.opts.Broker == nil {
		return broker.Caller{}, noCore()
	}
	return g.callerOf(ctx, s), nil
}

// queueOf names a request's queue.
func queueOf(mq *v2.MessageQueue) broker.QueueRef {
	return broker.QueueRef{Topic: mq.GetTopic().GetName(), QueueID: mq.GetId()}
}

// offsetStatus maps an offset call's refusal: NotFound is OFFSET_NOT_FOUND.
func offsetStatus(err *broker.Error, what string) *v2.Status {
	if err.Status == broker.NotFound {
		return statusf(v2.Code_OFFSET_NOT_FOUND, "%s: %s", what, err.Remark)
	}
	return fromBroker(err)
}

// awaitOffset waits for an offset call's answer.
func awaitOffset(ctx context.Context, what string, call func(done func(int64, *broker.Error))) (int64, *v2.Status) {
	type answer struct {
		off int64
		err *broker.Error
	}
	got := make(chan answer, 1)
	call(func(off int64, err *broker.Error) { got <- answer{off, err} })
	a, st := await(ctx, got)
	switch {
	case st != nil:
		return 0, st
	case a.err != nil:
		return 0, offsetStatus(a.err, what)
	}
	return a.off, okStatus()
}

// UpdateOffset commits a group's offset.
func (g *Gateway) UpdateOffset(ctx context.Context, req *v2.UpdateOffsetRequest) (*v2.UpdateOffsetResponse, error) {
	q, group := queueOf(req.GetMessageQueue()), req.GetGroup().GetName()
	c, st := g.offsetCall(ctx)
	if st == nil {
		st = okStatus()
		if err := g.opts.Broker.CommitOffset(c, group, q, req.GetOffset()); err != nil {
			st = offsetStatus(err, "update offset")
		}
	}
	return &v2.UpdateOffsetResponse{Status: st}, nil
}

// GetOffset reads a group's committed offset.
func (g *Gateway) GetOffset(ctx context.Context, req *v2.GetOffsetRequest) (*v2.GetOffsetResponse, error) {
	q, group := queueOf(req.GetMessageQueue()), req.GetGroup().GetName()
	c, st := g.offsetCall(ctx)
	if st != nil {
		return &v2.GetOffsetResponse{Status: st}, nil
	}
	off, st := awaitOffset(ctx, "get offset", func(done func(int64, *broker.Error)) {
		g.opts.Broker.ConsumerOffset(c, group, q, done)
	})
	return &v2.GetOffsetResponse{Status: st, Offset: off}, nil
}

// QueryOffset finds a queue's first or last offset, or the first at a
// time.
func (g *Gateway) QueryOffset(ctx context.Context, req *v2.QueryOffsetRequest) (*v2.QueryOffsetResponse, error) {
	q := queueOf(req.GetMessageQueue())
	c, st := g.offsetCall(ctx)
	if st != nil {
		return &v2.QueryOffsetResponse{Status: st}, nil
	}
	switch req.GetQueryOffsetPolicy() {
	case v2.QueryOffsetPolicy_END:
		_, maxOff, err := g.opts.Broker.QueueBounds(c, q)
		if err != nil {
			return &v2.QueryOffsetResponse{Status: fromBroker(err)}, nil
		}
		return &v2.QueryOffsetResponse{Status: okStatus(), Offset: maxOff}, nil
	case v2.QueryOffsetPolicy_TIMESTAMP:
		ts := req.GetTimestamp().AsTime().UnixMilli()
		off, st := awaitOffset(ctx, "query offset", func(done func(int64, *broker.Error)) {
			g.opts.Broker.OffsetAt(c, q, ts, done)
		})
		return &v2.QueryOffsetResponse{Status: st, Offset: off}, nil
	default:
		minOff, _, err := g.opts.Broker.QueueBounds(c, q)
		if err != nil {
			return &v2.QueryOffsetResponse{Status: fromBroker(err)}, nil
		}
		return &v2.QueryOffsetResponse{Status: okStatus(), Offset: minOff}, nil
	}
}

// PullMessage is not served: the SDKs consume through ReceiveMessage.
func (g *Gateway) PullMessage(_ *v2.PullMessageRequest, stream v2.MessagingService_PullMessageServer) error {
	st := statusf(v2.Code_NOT_IMPLEMENTED, "PullMessage is not served by wheelmq's gRPC endpoint: use ReceiveMessage, or the remoting port")
	g.m.rpcs.WithLabelValues("PullMessage", codeName(st.Code)).Inc()
	return stream.Send(&v2.PullMessageResponse{Content: &v2.PullMessageResponse_Status{Status: st}})
}
