package grpcgw

// ReceiveMessage (POP_MESSAGE), AckMessage, ChangeInvisibleDuration and
// ForwardMessageToDeadLetterQueue.

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// POP request codes (RocketMQ 5.3 RequestCode, defined in actors/wirecode).
const (
	PopMessage                 = remoting.PopMessage
	AckMessage                 = remoting.AckMessage
	ChangeMessageInvisibleTime = remoting.ChangeMessageInvisibleTime
)

// Receive limits (the Apache proxy's ProxyConfig defaults).
const (
	minInvisible       = 10 * time.Second
	maxInvisible       = 12 * time.Hour
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

// ReceiveMessage pops messages for the group: one status item, the
// messages, the delivery timestamp, then the end of the stream, before the
// client's deadline.
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
	invisible := autoRenewInvisible
	if !req.GetAutoRenew() || req.InvisibleDuration != nil {
		invisible = req.GetInvisibleDuration().AsDuration()
		if invisible < minInvisible || invisible > maxInvisible {
			return send(statusf(v2.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %s is outside [%s, %s]", invisible, minInvisible, maxInvisible), nil)
		}
	}
	batch := min(max(req.GetBatchSize(), 1), receiveBatchSize)
	reqTimeout := defaultRequestTimeout
	if set := s.clientSettings(); set.GetRequestTimeout() != nil {
		reqTimeout = set.GetRequestTimeout().AsDuration()
	}
	deadline, hasDeadline := ctx.Deadline()
	poll := pollTime(req, deadline, hasDeadline, reqTimeout, started)
	expr, typ := filterOf(req.GetFilterExpression())
	if req.GetFilterExpression() == nil {
		expr, typ = s.subscriptionOf(topic)
	}
	fifo := g.groupConfig(ctx, s, group).ConsumeMessageOrderly
	qid := int32(-1)
	if fifo && req.GetAutoRenew() && req.GetMessageQueue().GetId() >= 0 {
		qid = req.GetMessageQueue().GetId() // an orderly push consumer's own assigned queue
	}
	fields := map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(qid)),
		"maxMsgNums": strconv.Itoa(int(batch)), "invisibleTime": strconv.FormatInt(invisible.Milliseconds(), 10),
		"pollTime": strconv.FormatInt(poll.Milliseconds(), 10), "bornTime": strconv.FormatInt(started.UnixMilli(), 10),
		"initMode": "1", "expType": typ, "exp": expr, "order": strconv.FormatBool(fifo),
	}
	if id := req.GetAttemptId(); id != "" {
		fields["attemptId"] = id
	}
	c, err := s.conn(ctx)
	if err != nil {
		return send(internalStatus(err), nil)
	}
	resp, err := c.InvokeWithin(ctx, remoting.NewRequest(PopMessage, fields, nil), poll+g.opts.RequestTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return send(statusf(v2.Code_MESSAGE_NOT_FOUND, "no new message"), nil)
		}
		return send(internalStatus(err), nil)
	}
	if resp.Code != remoting.Success {
		st := fromRemoting(resp, "pop")
		if st.Code == v2.Code_MESSAGE_NOT_FOUND {
			st.Message = "no new message"
		}
		return send(st, nil)
	}
	msgs, err := g.popped(s, resp.Body, group, topic, req.GetAutoRenew(), invisible)
	if err != nil {
		return send(internalStatus(err), nil)
	}
	if len(msgs) == 0 {
		return send(statusf(v2.Code_MESSAGE_NOT_FOUND, "no new message"), nil)
	}
	return send(okStatus(), msgs)
}

// popped converts a POP_MESSAGE body into gRPC messages with receipt
// handles; auto-renewed ones are held by the session's renewer.
func (g *Gateway) popped(s *session, body []byte, group, topic string, autoRenew bool, invisible time.Duration) ([]*v2.Message, error) {
	var out []*v2.Message
	now := time.Now()
	for len(body) > 0 {
		rec, n, err := message.Decode(body)
		if err != nil {
			return out, err
		}
		body = body[n:]
		m := toMessage(&rec, g.opts.BrokerName, g.adv)
		ck, ok := message.LookupProperty(rec.Properties, propPopCK)
		if !ok {
			g.log.Warn().Str("topic", topic).Int64("offset", rec.QueueOffset).Msg("popped message without POP_CK: skipped")
			continue
		}
		h := clientHandle(ck, rec.PhysicalOffset)
		m.SystemProperties.ReceiptHandle = &h
		m.Topic = &v2.Resource{Name: topic}
		if autoRenew {
			s.renew.hold(h, group, topic, m.SystemProperties.MessageId, now.Add(invisible))
		}
		out = append(out, m)
	}
	return out, nil
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

// handleStatus checks a client's receipt handle before it goes to the
// broker.
func handleStatus(h string, now time.Time) (receipt, *v2.Status) {
	r, err := parseClientHandle(h)
	if err != nil {
		return r, statusf(v2.Code_INVALID_RECEIPT_HANDLE, "receipt handle is malformed")
	}
	if r.expired(now) {
		return r, statusf(v2.Code_INVALID_RECEIPT_HANDLE, "receipt handle is expired")
	}
	return r, nil
}

// handleAnswer maps the broker's answer to an ack or change: NO_MESSAGE
// and refusals of the handle are INVALID_RECEIPT_HANDLE.
func handleAnswer(resp *remoting.Command, what string) *v2.Status {
	switch resp.Code {
	case remoting.Success:
		return okStatus()
	case codeNoMessage, remoting.InvalidParameter, remoting.IllegalOperation:
		msg := resp.Remark
		if msg == "" {
			msg = "receipt handle is invalid"
		}
		return &v2.Status{Code: v2.Code_INVALID_RECEIPT_HANDLE, Message: msg}
	}
	return fromRemoting(resp, what)
}

// ack sends one ACK_MESSAGE.
func (g *Gateway) ack(ctx context.Context, s *session, group, topic string, r receipt) *v2.Status {
	resp, err := s.invoke(ctx, remoting.NewRequest(AckMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(r.queueID)),
		"extraInfo": r.broker, "offset": strconv.FormatInt(r.offset, 10),
	}, nil))
	if err != nil {
		return internalStatus(err)
	}
	return handleAnswer(resp, "ack")
}

// AckMessage acks each entry (ACK_MESSAGE per handle); the top status is
// OK, the entries' common failure, or MULTIPLE_RESULTS.
func (g *Gateway) AckMessage(ctx context.Context, req *v2.AckMessageRequest) (*v2.AckMessageResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.AckMessageResponse{Status: st}, nil
	}
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	out := &v2.AckMessageResponse{}
	now := time.Now()
	var failed, okN int
	for _, e := range req.GetEntries() {
		h := s.renew.take(e.GetReceiptHandle())
		r, st := handleStatus(h, now)
		if st == nil {
			st = g.ack(ctx, s, group, topic, r)
		}
		if st.GetCode() == v2.Code_OK {
			okN++
		} else {
			failed++
			if out.Status == nil {
				out.Status = st
			}
		}
		out.Entries = append(out.Entries, &v2.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle(), Status: st})
	}
	switch {
	case failed == 0:
		out.Status = okStatus()
	case okN > 0:
		out.Status = statusf(v2.Code_MULTIPLE_RESULTS, "%d of %d acks failed", failed, failed+okN)
	}
	return out, nil
}

// change sends CHANGE_MESSAGE_INVISIBLETIME and returns the broker's new
// handle.
func (g *Gateway) change(ctx context.Context, s *session, group, topic string, r receipt, d time.Duration) (string, *v2.Status) {
	resp, err := s.invoke(ctx, remoting.NewRequest(ChangeMessageInvisibleTime, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(r.queueID)),
		"extraInfo": r.broker, "offset": strconv.FormatInt(r.offset, 10),
		"invisibleTime": strconv.FormatInt(d.Milliseconds(), 10),
	}, nil))
	if err != nil {
		return "", internalStatus(err)
	}
	if st := handleAnswer(resp, "change invisible time"); st.GetCode() != v2.Code_OK {
		return "", st
	}
	popTime, err1 := strconv.ParseInt(resp.Field("popTime"), 10, 64)
	inv, err2 := strconv.ParseInt(resp.Field("invisibleTime"), 10, 64)
	rq, err3 := strconv.Atoi(resp.Field("reviveQid"))
	if err1 != nil || err2 != nil || err3 != nil {
		return "", statusf(v2.Code_INTERNAL_SERVER_ERROR, "change invisible time: the broker's answer has no popTime, invisibleTime or reviveQid")
	}
	return r.renewed(popTime, inv, int32(rq)), nil
}

// ChangeInvisibleDuration moves a message's invisibility deadline and
// answers the new handle (the old one is dead from then on).
func (g *Gateway) ChangeInvisibleDuration(ctx context.Context, req *v2.ChangeInvisibleDurationRequest) (*v2.ChangeInvisibleDurationResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	d := req.GetInvisibleDuration().AsDuration()
	if d < 0 || d > maxInvisible {
		return &v2.ChangeInvisibleDurationResponse{Status: statusf(v2.Code_ILLEGAL_INVISIBLE_TIME,
			"invisible duration %s is outside [0, %s]", d, maxInvisible)}, nil
	}
	h := s.renew.take(req.GetReceiptHandle())
	r, st := handleStatus(h, time.Now())
	if st != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	nh, st := g.change(ctx, s, req.GetGroup().GetName(), req.GetTopic().GetName(), r, d)
	if st != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	return &v2.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: clientHandle(nh, r.clOffset)}, nil
}

// ForwardMessageToDeadLetterQueue sends the message to %DLQ%<group>
// (CONSUMER_SEND_MSG_BACK, delayLevel -1), then acks it.
func (g *Gateway) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2.ForwardMessageToDeadLetterQueueRequest) (*v2.ForwardMessageToDeadLetterQueueResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	h := s.renew.take(req.GetReceiptHandle())
	r, st := handleStatus(h, time.Now())
	if st == nil && r.clOffset < 0 {
		st = statusf(v2.Code_INVALID_RECEIPT_HANDLE, "receipt handle carries no CommitLog offset")
	}
	if st != nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	maxTimes := max(req.GetMaxDeliveryAttempts()-1, 0)
	resp, err := s.invoke(ctx, remoting.NewRequest(remoting.ConsumerSendMsgBack, map[string]string{
		"group": group, "offset": strconv.FormatInt(r.clOffset, 10), "delayLevel": "-1",
		"originMsgId": req.GetMessageId(), "originTopic": topic, "maxReconsumeTimes": strconv.Itoa(int(maxTimes)),
	}, nil))
	if err != nil {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: internalStatus(err)}, nil
	}
	if resp.Code != remoting.Success {
		return &v2.ForwardMessageToDeadLetterQueueResponse{Status: fromRemoting(resp, "forward to the dead letter queue")}, nil
	}
	return &v2.ForwardMessageToDeadLetterQueueResponse{Status: g.ack(ctx, s, group, topic, r)}, nil
}
