package grpcgw

// ReceiveMessage, through the broker API in process (acks and changes:
// ack.go).

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pop"
)

// Receive limits (the Apache proxy's ProxyConfig defaults).
const (
	autoRenewInvisible = 60 * time.Second
	maxLongPolling     = 20 * time.Second
	minLongPolling     = 5 * time.Second
	// pollSlack is kept between the broker's answer and the client's
	// deadline, for the way back.
	pollSlack = 500 * time.Millisecond
)

// pollTime is how long the broker may hold a receive: the client's
// long_polling_timeout clamped to [5 s, 20 s], or (Go sends none) the
// deadline's remaining time less half the request timeout; never past the
// deadline less pollSlack, never below zero.
func pollTime(req *v2.ReceiveMessageRequest, deadline time.Time, hasDeadline bool, reqTimeout time.Duration, now time.Time) time.Duration {
	var poll time.Duration
	if lp := req.GetLongPollingTimeout(); lp != nil {
		poll = min(max(lp.AsDuration(), minLongPolling), maxLongPolling)
	} else if hasDeadline {
		poll = min(deadline.Sub(now)-reqTimeout/2, maxLongPolling)
	} else {
		poll = maxLongPolling
	}
	if hasDeadline {
		poll = min(poll, deadline.Sub(now)-pollSlack)
	}
	return max(poll, 0)
}

// ReceiveMessage pops messages for the group through the broker API, in
// process: one status item, the messages, the delivery timestamp, then the
// end of the stream, before the client's deadline.
func (g *Gateway) ReceiveMessage(req *v2.ReceiveMessageRequest, stream v2.MessagingService_ReceiveMessageServer) error {
	ctx, cancel := g.callContext(stream.Context())
	defer cancel()
	started := time.Now()
	send := func(st *v2.Status, msgs []*v2.Message) error {
		g.m.rpcs.WithLabelValues("ReceiveMessage", codeName(st.GetCode())).Inc()
		if err := stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Status{Status: st}}); err != nil {
			return err
		}
		for _, m := range msgs {
			if err := stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Message{Message: m}}); err != nil {
				return err
			}
		}
		if len(msgs) > 0 {
			return stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_DeliveryTimestamp{
				DeliveryTimestamp: timestamppb.New(started)}})
		}
		return nil
	}
	s, st := g.session(ctx)
	if st != nil {
		return send(st, nil)
	}
	group, topic := req.GetGroup().GetName(), req.GetMessageQueue().GetTopic().GetName()
	if group == "" {
		return send(statusf(v2.Code_ILLEGAL_CONSUMER_GROUP, "consumer group is empty"), nil)
	}
	if topic == "" {
		return send(statusf(v2.Code_ILLEGAL_TOPIC, "topic is empty"), nil)
	}
	core := g.opts.Broker
	if core == nil {
		return send(noCore(), nil)
	}
	invisible := autoRenewInvisible
	if !req.GetAutoRenew() || req.InvisibleDuration != nil {
		invisible = req.GetInvisibleDuration().AsDuration()
	}
	batch := min(max(req.GetBatchSize(), 1), receiveBatchSize)
	reqTimeout := defaultRequestTimeout
	if set := s.clientSettings(); set.GetRequestTimeout() != nil {
		reqTimeout = set.GetRequestTimeout().AsDuration()
	}
	deadline, hasDeadline := ctx.Deadline()
	poll := pollTime(req, deadline, hasDeadline, reqTimeout, started)
	if s.isLite() {
		return g.liteReceive(ctx, s, group, topic, invisible, batch, poll, send) // lite.go
	}
	expr, typ := filterOf(req.GetFilterExpression())
	if req.GetFilterExpression() == nil {
		expr, typ = s.subscriptionOf(topic)
	}
	cfg, _ := core.GroupConfig(group) // a refusal comes from Pop
	qid := int32(-1)
	if cfg.ConsumeMessageOrderly && req.GetAutoRenew() && req.GetMessageQueue().GetId() >= 0 {
		qid = req.GetMessageQueue().GetId() // an orderly push consumer's own assigned queue
	}
	type answer struct {
		res *broker.PopResult
		err *broker.Error
	}
	got := make(chan answer, 1)
	caller := g.callerOf(ctx, s)
	var gone struct {
		sync.Mutex
		left bool // the client left: an answer from now on is released
	}
	core.Pop(caller, &broker.PopRequest{
		Group: group, Topic: topic, QueueID: qid, MaxNums: batch, Invisible: invisible, Poll: poll,
		InitMode: pop.InitMax, ExpType: typ, Exp: expr, Conn: sessionConn(s.id),
	}, func(res *broker.PopResult, err *broker.Error) {
		gone.Lock()
		left := gone.left
		if !left {
			got <- answer{res, err} // buffered: never blocks
		}
		gone.Unlock()
		if left {
			g.release(nil, res, group, topic, caller) // nothing of it was held: no session handles
		}
	})
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		// What the pop takes from now on is released (release.go); an
		// answer already here too.
		gone.Lock()
		gone.left = true
		gone.Unlock()
		select {
		case a = <-got:
			g.release(nil, a.res, group, topic, caller)
		default:
		}
		return send(statusf(v2.Code_MESSAGE_NOT_FOUND, "no new message"), nil)
	}
	if a.err != nil {
		return send(fromBroker(a.err), nil)
	}
	if a.res.Empty == broker.PollingFull {
		return send(statusf(v2.Code_TOO_MANY_REQUESTS, "%s", a.res.Remark), nil)
	}
	msgs := g.popped(s, a.res, group, topic, req.GetAutoRenew(), caller, invisible)
	if len(msgs) == 0 {
		return send(s.emptyReceive(started, poll, time.Now()), nil)
	}
	if err := send(okStatus(), msgs); err != nil {
		// The client gets none of them: a stream that fails is a failed
		// receive to the SDKs.
		g.release(s, a.res, group, topic, caller)
		return err
	}
	return nil
}

// popped converts a pop's deliveries into gRPC messages with receipt
// handles; auto-renewed ones are held by the session's renewer.
func (g *Gateway) popped(s *session, res *broker.PopResult, group, topic string, autoRenew bool, c broker.Caller, invisible time.Duration) []*v2.Message {
	out := make([]*v2.Message, 0, len(res.Messages))
	now := time.Now()
	inv := durationpb.New(invisible)
	for i := range res.Messages {
		d := &res.Messages[i]
		m := toMessage(&d.Record, g.opts.BrokerName, g.adv)
		h := clientHandle(d.Handle.String(), d.Record.PhysicalOffset)
		m.SystemProperties.ReceiptHandle = &h
		m.SystemProperties.InvisibleDuration = inv
		m.Topic = &v2.Resource{Name: topic}
		if autoRenew {
			s.renew.hold(h, group, topic, m.SystemProperties.MessageId, m.SystemProperties.GetDeliveryAttempt(), c, now.Add(invisible))
		}
		out = append(out, m)
	}
	return out
}

// sessionConn is the number a session's pops are counted under (the
// engine bounds the parked pops of each): a hash of its client id, with
// the top bit set so that it never equals a remoting connection's id.
func sessionConn(clientID string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(clientID))
	return h.Sum64() | 1<<63
}

// subscriptionOf is the session's filter for topic (TAG * when none).
func (s *session) subscriptionOf(topic string) (expr, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.subs {
		if e.GetTopic().GetName() == topic {
			return filterOf(e.GetExpression())
		}
	}
	return "*", "TAG"
}

// callContext is ctx, also ended by Stop.
func (g *Gateway) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(g.stopCtx, cancel)
	return ctx, func() { unhook(); cancel() }
}
