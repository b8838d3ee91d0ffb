package grpcgw

// The offset RPCs (for pull consumers; the Go and Node SDKs do not send
// them) and the RPCs left out.

import (
	"context"
	"strconv"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// offsetCall sends one offset request and reads its "offset" answer.
func (g *Gateway) offsetCall(ctx context.Context, code int32, fields map[string]string, what string) (int64, *v2.Status) {
	s, st := g.session(ctx)
	if st != nil {
		return 0, st
	}
	resp, err := s.invoke(ctx, remoting.NewRequest(code, fields, nil))
	if err != nil {
		return 0, internalStatus(err)
	}
	if resp.Code == remoting.QueryNotFound {
		return 0, statusf(v2.Code_OFFSET_NOT_FOUND, "%s: %s", what, resp.Remark)
	}
	if resp.Code != remoting.Success {
		return 0, fromRemoting(resp, what)
	}
	off, err := strconv.ParseInt(resp.Field("offset"), 10, 64)
	if err != nil && code != remoting.UpdateConsumerOffset {
		return 0, statusf(v2.Code_INTERNAL_SERVER_ERROR, "%s: the broker's answer has no offset", what)
	}
	return off, okStatus()
}

// queueFields names a request's topic and queue.
func queueFields(mq *v2.MessageQueue) map[string]string {
	return map[string]string{"topic": mq.GetTopic().GetName(), "queueId": strconv.Itoa(int(mq.GetId()))}
}

// UpdateOffset commits a group's offset (UPDATE_CONSUMER_OFFSET 15).
func (g *Gateway) UpdateOffset(ctx context.Context, req *v2.UpdateOffsetRequest) (*v2.UpdateOffsetResponse, error) {
	f := queueFields(req.GetMessageQueue())
	f["consumerGroup"], f["commitOffset"] = req.GetGroup().GetName(), strconv.FormatInt(req.GetOffset(), 10)
	_, st := g.offsetCall(ctx, remoting.UpdateConsumerOffset, f, "update offset")
	return &v2.UpdateOffsetResponse{Status: st}, nil
}

// GetOffset reads a group's committed offset (QUERY_CONSUMER_OFFSET 14).
func (g *Gateway) GetOffset(ctx context.Context, req *v2.GetOffsetRequest) (*v2.GetOffsetResponse, error) {
	f := queueFields(req.GetMessageQueue())
	f["consumerGroup"] = req.GetGroup().GetName()
	off, st := g.offsetCall(ctx, remoting.QueryConsumerOffset, f, "get offset")
	return &v2.GetOffsetResponse{Status: st, Offset: off}, nil
}

// QueryOffset finds a queue's first or last offset, or the one at a time
// (GET_MIN_OFFSET 31, GET_MAX_OFFSET 30, SEARCH_OFFSET_BY_TIMESTAMP 29).
func (g *Gateway) QueryOffset(ctx context.Context, req *v2.QueryOffsetRequest) (*v2.QueryOffsetResponse, error) {
	f := queueFields(req.GetMessageQueue())
	code := remoting.GetMinOffset
	switch req.GetQueryOffsetPolicy() {
	case v2.QueryOffsetPolicy_END:
		code = remoting.GetMaxOffset
	case v2.QueryOffsetPolicy_TIMESTAMP:
		code = remoting.SearchOffsetByTimestamp
		f["timestamp"] = strconv.FormatInt(req.GetTimestamp().AsTime().UnixMilli(), 10)
	}
	off, st := g.offsetCall(ctx, code, f, "query offset")
	return &v2.QueryOffsetResponse{Status: st, Offset: off}, nil
}

// PullMessage is not served: the SDKs consume through ReceiveMessage.
func (g *Gateway) PullMessage(_ *v2.PullMessageRequest, stream v2.MessagingService_PullMessageServer) error {
	st := statusf(v2.Code_NOT_IMPLEMENTED, "PullMessage is not served by wheelmq's gRPC endpoint: use ReceiveMessage, or the remoting port")
	g.m.rpcs.WithLabelValues("PullMessage", codeName(st.Code)).Inc()
	return stream.Send(&v2.PullMessageResponse{Content: &v2.PullMessageResponse_Status{Status: st}})
}

// SyncLiteSubscription is not served (lite topics are not supported).
func (g *Gateway) SyncLiteSubscription(context.Context, *v2.SyncLiteSubscriptionRequest) (*v2.SyncLiteSubscriptionResponse, error) {
	return &v2.SyncLiteSubscriptionResponse{Status: statusf(v2.Code_UNSUPPORTED, "lite topics are not supported")}, nil
}
