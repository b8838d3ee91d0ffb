package grpcgw

// Lite topics (RocketMQ 5.5, RIP-83; docs/lite.md): SyncLiteSubscription,
// the receives, acks and changes of a lite consumer (a session whose
// client type is LITE_PUSH_CONSUMER or, RocketMQ 5.5.1's
// LiteSimpleConsumer, LITE_SIMPLE_CONSUMER), and NotifyUnsubscribeLiteCommand
// when the broker drops a subscription. The broker API decides (actors/
// broker lite*.go); this is the codec.

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/storage/message"
)

// liteLongPolling is the long polling a LitePushConsumer is told to use.
const liteLongPolling = 5 * time.Second

// isLite reports whether the session is a lite consumer's: a
// LitePushConsumer's or a LiteSimpleConsumer's (RocketMQ 5.5.1).
func (s *session) isLite() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return isLiteType(s.clientType)
}

// isLiteType reports whether typ is a lite consumer's client type.
func isLiteType(typ v2.ClientType) bool {
	return typ == v2.ClientType_LITE_PUSH_CONSUMER || typ == v2.ClientType_LITE_SIMPLE_CONSUMER
}

// liteSettings fills a lite consumer's settings answer: each lite topic
// is consumed in order, the subscription quota and the longest lite topic
// name (the Java client refuses a subscribeLite past the quota it was
// told, 0 when none). A LitePushConsumer also gets a short long polling:
// a new message wakes the receive anyway, and the Go SDK's GracefulStop
// waits long polling + request timeout for receives it miscounts
// (docs/lite.md); a LiteSimpleConsumer sends its own in each receive.
func liteSettings(typ v2.ClientType, sub *v2.Subscription, quota int) {
	fifo, q, maxLen := true, int32(quota), int32(message.MaxLiteTopicLen)
	sub.Fifo, sub.LiteSubscriptionQuota, sub.MaxLiteTopicSize = &fifo, &q, &maxLen
	if typ == v2.ClientType_LITE_PUSH_CONSUMER {
		sub.LongPollingTimeout = durationpb.New(liteLongPolling)
	}
}

// liteActions maps the protocol's actions to the broker's.
var liteActions = map[v2.LiteSubscriptionAction]broker.LiteAction{
	v2.LiteSubscriptionAction_PARTIAL_ADD:     broker.LitePartialAdd,
	v2.LiteSubscriptionAction_PARTIAL_REMOVE:  broker.LitePartialRemove,
	v2.LiteSubscriptionAction_COMPLETE_ADD:    broker.LiteCompleteAdd,
	v2.LiteSubscriptionAction_COMPLETE_REMOVE: broker.LiteCompleteRemove,
}

// SyncLiteSubscription changes the client's lite subscriptions.
func (g *Gateway) SyncLiteSubscription(ctx context.Context, req *v2.SyncLiteSubscriptionRequest) (*v2.SyncLiteSubscriptionResponse, error) {
	answer := func(st *v2.Status) (*v2.SyncLiteSubscriptionResponse, error) {
		g.m.rpcs.WithLabelValues("SyncLiteSubscription", codeName(st.GetCode())).Inc()
		return &v2.SyncLiteSubscriptionResponse{Status: st}, nil
	}
	s, st := g.session(ctx)
	if st != nil {
		return answer(st)
	}
	core := g.opts.Broker
	if core == nil {
		return answer(noCore())
	}
	action, ok := liteActions[req.GetAction()]
	if !ok {
		return answer(statusf(v2.Code_BAD_REQUEST, "unknown lite subscription action %v", req.GetAction()))
	}
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if group == "" {
		return answer(statusf(v2.Code_ILLEGAL_CONSUMER_GROUP, "consumer group is empty"))
	}
	if topic == "" {
		return answer(statusf(v2.Code_ILLEGAL_TOPIC, "topic is empty"))
	}
	err := core.SyncLiteSubscription(g.callerOf(ctx, s), &broker.LiteSubscription{Action: action, Topic: topic, Group: group,
		Client: s.id, Lites: req.GetLiteTopicSet()})
	switch {
	case err == nil:
		return answer(okStatus())
	case errors.Is(err.Err, broker.ErrLiteQuota):
		return answer(&v2.Status{Code: v2.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED, Message: err.Remark})
	case err.Status == broker.IllegalMessage:
		return answer(&v2.Status{Code: v2.Code_ILLEGAL_LITE_TOPIC, Message: err.Remark})
	}
	return answer(fromBroker(err))
}

// liteReceive serves a lite consumer's ReceiveMessage: the messages of
// its lite topics, whatever queue it names.
func (g *Gateway) liteReceive(ctx context.Context, s *session, group, topic string,
	invisible time.Duration, batch int32, poll time.Duration, send func(*v2.Status, []*v2.Message) error) error {
	got, err := g.opts.Broker.LiteReceive(ctx, g.callerOf(ctx, s), &broker.LiteReceiveRequest{Group: group, Topic: topic,
		Client: s.id, Max: int(batch), Invisible: invisible, Poll: poll})
	if err != nil {
		return send(fromBroker(err), nil)
	}
	if len(got) == 0 {
		return send(statusf(v2.Code_MESSAGE_NOT_FOUND, "no new message"), nil)
	}
	inv := durationpb.New(invisible)
	msgs := make([]*v2.Message, 0, len(got))
	for i := range got {
		d := &got[i]
		m := toMessage(&d.Record, g.opts.BrokerName, g.adv)
		h := d.Handle
		m.SystemProperties.ReceiptHandle = &h
		m.SystemProperties.InvisibleDuration = inv
		m.SystemProperties.DeliveryAttempt = &d.Attempt
		m.Topic = &v2.Resource{Name: topic}
		msgs = append(msgs, m)
	}
	return send(okStatus(), msgs)
}

// liteAck acks one lite delivery.
func (g *Gateway) liteAck(ctx context.Context, s *session, group, handle string) *v2.Status {
	if g.opts.Broker == nil {
		return noCore()
	}
	if err := g.opts.Broker.LiteAck(g.callerOf(ctx, s), group, handle); err != nil {
		return liteHandleError(err)
	}
	return okStatus()
}

// liteChange changes one lite delivery's invisible time; suspend (the
// request's field, which the Java lite consumers set) keeps its attempt.
func (g *Gateway) liteChange(ctx context.Context, s *session, group, handle string, d time.Duration, suspend bool) (string, *v2.Status) {
	if g.opts.Broker == nil {
		return "", noCore()
	}
	nh, err := g.opts.Broker.LiteChangeInvisible(g.callerOf(ctx, s), group, handle, d, suspend)
	if err != nil {
		return "", liteHandleError(err)
	}
	return nh, okStatus()
}

// liteHandleError maps a refused lite ack or change: a stale or malformed
// handle is INVALID_RECEIPT_HANDLE.
func liteHandleError(err *broker.Error) *v2.Status {
	if err.Status == broker.NotFound {
		return &v2.Status{Code: v2.Code_INVALID_RECEIPT_HANDLE, Message: err.Remark}
	}
	return handleError(err)
}

// notifyLite tells a client the broker dropped its subscription to a lite
// topic (NotifyUnsubscribeLiteCommand on its Telemetry stream), off the
// caller's goroutine.
func (g *Gateway) notifyLite(group, client, parent, lite string) {
	g.sess.mu.Lock()
	s := g.sess.m[client]
	g.sess.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	t := s.tele
	s.mu.Unlock()
	if t == nil {
		return
	}
	log := g.log.With().Str("client_id", client).Str("group", group).Str("topic", parent).Str("liteTopic", lite).Logger()
	// The send runs off the caller (the broker's lite writer or a
	// SyncLiteSubscription): a stream under flow control may block it; the
	// stream's end (the session's or the gateway's) ends the send.
	g.goOwned("lite unsubscribe notice", func() {
		err := t.send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_NotifyUnsubscribeLiteCommand{
			NotifyUnsubscribeLiteCommand: &v2.NotifyUnsubscribeLiteCommand{LiteTopic: lite}}})
		if err != nil {
			log.Debug().Err(err).Msg("lite unsubscribe notice not sent")
			return
		}
		log.Debug().Msg("lite unsubscribe notice sent")
	})
}
