package grpctest

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// liteSimple drives the v5 protocol exactly as the Java client's
// LiteSimpleConsumer (rocketmq-clients java, LiteSimpleConsumerImpl over
// SimpleConsumerImpl and LiteSubscriptionManager) does; the Go SDK v5.1.4
// has none, so the SDK's generated stubs make the calls.
type liteSimple struct {
	t            *testing.T
	c            v2.MessagingServiceClient
	ctx          context.Context
	group, topic string
	mq           *v2.MessageQueue // the first readable queue of the route
}

// sync is one SyncLiteSubscription (the LiteSubscriptionManager's).
func (l *liteSimple) sync(action v2.LiteSubscriptionAction, lites ...string) v2.Code {
	l.t.Helper()
	resp, err := l.c.SyncLiteSubscription(l.ctx, &v2.SyncLiteSubscriptionRequest{Action: action,
		Topic: &v2.Resource{Name: l.topic}, Group: &v2.Resource{Name: l.group}, LiteTopicSet: lites})
	if err != nil {
		l.t.Fatalf("SyncLiteSubscription %v %v: %v", action, lites, err)
	}
	return resp.GetStatus().GetCode()
}

// receive is SimpleConsumerImpl.receive0's ReceiveMessage: the route's
// queue, filter *, batch, invisible duration, auto_renew false, the
// await duration as long polling; the call ends by wait.
func (l *liteSimple) receive(wait time.Duration) []*v2.Message {
	l.t.Helper()
	rctx, cancel := context.WithTimeout(l.ctx, wait)
	defer cancel()
	stream, err := l.c.ReceiveMessage(rctx, &v2.ReceiveMessageRequest{Group: &v2.Resource{Name: l.group},
		MessageQueue: l.mq, FilterExpression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"},
		BatchSize: 16, InvisibleDuration: durationpb.New(30 * time.Second), AutoRenew: false,
		LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		l.t.Fatalf("ReceiveMessage: %v", err)
	}
	var out []*v2.Message
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			l.t.Fatalf("ReceiveMessage stream: %v", err)
		}
		if st := r.GetStatus(); st != nil && st.GetCode() != v2.Code_OK && st.GetCode() != v2.Code_MESSAGE_NOT_FOUND {
			l.t.Fatalf("ReceiveMessage status: %v", st)
		}
		if m := r.GetMessage(); m != nil {
			out = append(out, m)
		}
	}
}

// ack is ConsumerImpl.wrapAckMessageRequest's AckMessage: lite_topic set.
func (l *liteSimple) ack(m *v2.Message) v2.Code {
	l.t.Helper()
	lite := m.GetSystemProperties().GetLiteTopic()
	r, err := l.c.AckMessage(l.ctx, &v2.AckMessageRequest{Group: &v2.Resource{Name: l.group}, Topic: &v2.Resource{Name: l.topic},
		Entries: []*v2.AckMessageEntry{{MessageId: m.GetSystemProperties().GetMessageId(),
			ReceiptHandle: m.GetSystemProperties().GetReceiptHandle(), LiteTopic: &lite}}})
	if err != nil {
		l.t.Fatalf("AckMessage: %v", err)
	}
	if r.GetStatus().GetCode() != v2.Code_OK {
		return r.GetStatus().GetCode()
	}
	return r.GetEntries()[0].GetStatus().GetCode()
}

// change is ConsumerImpl.wrapChangeInvisibleDuration's call: a lite
// consumer sets lite_topic and suspend.
func (l *liteSimple) change(m *v2.Message, d time.Duration) (string, v2.Code) {
	l.t.Helper()
	lite, suspend := m.GetSystemProperties().GetLiteTopic(), true
	r, err := l.c.ChangeInvisibleDuration(l.ctx, &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: l.group},
		Topic: &v2.Resource{Name: l.topic}, ReceiptHandle: m.GetSystemProperties().GetReceiptHandle(),
		InvisibleDuration: durationpb.New(d), MessageId: m.GetSystemProperties().GetMessageId(), LiteTopic: &lite, Suspend: &suspend})
	if err != nil {
		l.t.Fatalf("ChangeInvisibleDuration: %v", err)
	}
	return r.GetReceiptHandle(), r.GetStatus().GetCode()
}

// send sends body to lite topic lite of the bind topic by raw
// SendMessage (a producer's call).
func (l *liteSimple) send(lite, body string) {
	l.t.Helper()
	resp, err := l.c.SendMessage(l.ctx, &v2.SendMessageRequest{Messages: []*v2.Message{rawMessage(l.topic, body,
		func(sp *v2.SystemProperties) {
			sp.LiteTopic = &lite
			sp.MessageType = v2.MessageType_LITE
		})}})
	if err != nil || resp.GetStatus().GetCode() != v2.Code_OK {
		l.t.Fatalf("send %s to lite topic %s: %v %v", body, lite, resp, err)
	}
}

// liteBodies lists the messages as lite/body, sorted; each must be a LITE
// message of its lite topic.
func liteBodies(t *testing.T, msgs []*v2.Message) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		if m.GetSystemProperties().GetMessageType() != v2.MessageType_LITE {
			t.Fatalf("message type %v, want LITE", m.GetSystemProperties().GetMessageType())
		}
		out = append(out, m.GetSystemProperties().GetLiteTopic()+"/"+string(m.GetBody()))
	}
	slices.Sort(out)
	return out
}

// TestLiteSimpleConsumer (RocketMQ 5.5.1's LiteSimpleConsumer, apache/
// rocketmq PR #10570; the client in rocketmq-clients java): the calls
// the Java LiteSimpleConsumer makes, in its order, over real gRPC to a
// broker process: Telemetry settings as LITE_SIMPLE_CONSUMER with the
// bind topic subscribed "*" (the answer must carry the subscription
// quota, without which the client refuses every subscribeLite), Heartbeat,
// QueryRoute of the bind topic (it keeps the first readable queue),
// SyncLiteSubscription COMPLETE_ADD of its empty set at start, then
// PARTIAL_ADD per subscribeLite; ReceiveMessage (that queue, batch,
// invisible duration, auto_renew false, the await duration as long
// polling) delivers the oldest message of each subscribed lite topic, one
// in flight per lite topic, none of an unsubscribed one; AckMessage with
// lite_topic releases the lite topic's next; ChangeInvisibleDuration with
// lite_topic and suspend (the client always sets it) to 0 brings the
// message back first with the same attempt and kills the old handle;
// PARTIAL_REMOVE per unsubscribeLite stops delivery; NotifyClientTermination
// at close drops the client's subscriptions.
func TestLiteSimpleConsumer(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := node(t, nil, nil)
	topic, group := processtest.Unique("grpc_lite_simple"), processtest.Unique("grpc_lite_simple_cg")
	createLiteTopic(t, n, topic, "")
	const client = "test@1@1@litesimple"
	c := rawClient(t, n.GRPCAddr())
	ctx, cancel := context.WithTimeout(withClientID(context.Background(), client), 40*time.Second)
	defer cancel()

	tele, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatalf("telemetry: %v", err)
	}
	typ := v2.ClientType_LITE_SIMPLE_CONSUMER
	if err := tele.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: &typ, RequestTimeout: durationpb.New(3 * time.Second),
		PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: &v2.Resource{Name: group},
			Subscriptions: []*v2.SubscriptionEntry{{Topic: &v2.Resource{Name: topic},
				Expression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"}}}}}}}}); err != nil {
		t.Fatalf("telemetry settings: %v", err)
	}
	first, err := tele.Recv()
	sub := first.GetSettings().GetSubscription()
	if err != nil || sub.GetLiteSubscriptionQuota() <= 0 || sub.GetMaxLiteTopicSize() <= 0 || !sub.GetFifo() {
		t.Fatalf("settings answer of a LiteSimpleConsumer: %v %v, want fifo, a subscription quota and a lite topic size", first, err)
	}
	if hb, err := c.Heartbeat(ctx, &v2.HeartbeatRequest{Group: &v2.Resource{Name: group}, ClientType: typ}); err != nil ||
		hb.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("heartbeat: %v %v", hb, err)
	}
	route, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	if err != nil || len(route.GetMessageQueues()) == 0 {
		t.Fatalf("route: %v %v", route, err)
	}
	l := &liteSimple{t: t, c: c, ctx: ctx, group: group, topic: topic, mq: route.GetMessageQueues()[0]}
	for _, mq := range route.GetMessageQueues() {
		if mq.GetPermission() == v2.Permission_READ || mq.GetPermission() == v2.Permission_READ_WRITE {
			l.mq = mq
			break
		}
	}
	if code := l.sync(v2.LiteSubscriptionAction_COMPLETE_ADD); code != v2.Code_OK {
		t.Fatalf("COMPLETE_ADD of the empty set: %v", code)
	}
	for _, lite := range []string{"a", "b"} {
		if code := l.sync(v2.LiteSubscriptionAction_PARTIAL_ADD, lite); code != v2.Code_OK {
			t.Fatalf("subscribeLite %s: %v", lite, code)
		}
	}
	if got := n.Broker().Core().LiteSubscriptions(group, client); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("subscriptions %v, want [a b]", got)
	}

	for _, m := range [][2]string{{"a", "a-0"}, {"c", "c-0"}, {"b", "b-0"}, {"a", "a-1"}, {"b", "b-1"}} {
		l.send(m[0], m[1])
	}

	got := l.receive(10 * time.Second)
	if b := liteBodies(t, got); !slices.Equal(b, []string{"a/a-0", "b/b-0"}) {
		t.Fatalf("first receive %v, want the oldest of a and of b (one in flight each, c not subscribed)", b)
	}
	var a0, b0 *v2.Message
	for _, m := range got {
		if m.GetSystemProperties().GetDeliveryAttempt() != 1 {
			t.Fatalf("attempt %d, want 1", m.GetSystemProperties().GetDeliveryAttempt())
		}
		if m.GetSystemProperties().GetLiteTopic() == "a" {
			a0 = m
		} else {
			b0 = m
		}
	}
	if code := l.ack(a0); code != v2.Code_OK {
		t.Fatalf("ack a-0: %v", code)
	}
	next := l.receive(10 * time.Second)
	if b := liteBodies(t, next); !slices.Equal(b, []string{"a/a-1"}) {
		t.Fatalf("after the ack of a-0: %v, want only a-1 (b-0 in flight)", b)
	}
	a1 := next[0]

	// ChangeInvisibleDuration 0 with suspend: b-0 again, the same attempt.
	if _, code := l.change(b0, 0); code != v2.Code_OK {
		t.Fatalf("change b-0: %v", code)
	}
	again := l.receive(10 * time.Second)
	if b := liteBodies(t, again); !slices.Equal(b, []string{"b/b-0"}) || again[0].GetSystemProperties().GetDeliveryAttempt() != 1 {
		t.Fatalf("after the suspend of b-0: %v (attempt %d), want b-0 again, attempt 1", b, again[0].GetSystemProperties().GetDeliveryAttempt())
	}
	if code := l.ack(b0); code != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("ack with b-0's old handle: %v, want INVALID_RECEIPT_HANDLE", code)
	}
	// A change that comes back to a longer invisible time keeps the handle live.
	nh, code := l.change(again[0], 30*time.Second)
	if code != v2.Code_OK || nh == "" {
		t.Fatalf("change b-0 to 30 s: %v %q", code, nh)
	}
	again[0].SystemProperties.ReceiptHandle = &nh
	for _, m := range []*v2.Message{a1, again[0]} {
		if code := l.ack(m); code != v2.Code_OK {
			t.Fatalf("ack %s: %v", m.GetBody(), code)
		}
	}
	last := l.receive(10 * time.Second)
	if b := liteBodies(t, last); !slices.Equal(b, []string{"b/b-1"}) {
		t.Fatalf("last receive %v, want b-1", b)
	}
	if code := l.ack(last[0]); code != v2.Code_OK {
		t.Fatalf("ack b-1: %v", code)
	}

	// unsubscribeLite b: a new b message is not delivered; a's is.
	if code := l.sync(v2.LiteSubscriptionAction_PARTIAL_REMOVE, "b"); code != v2.Code_OK {
		t.Fatalf("unsubscribeLite b: %v", code)
	}
	l.send("b", "b-2")
	l.send("a", "a-2")
	if b := liteBodies(t, l.receive(10*time.Second)); !slices.Equal(b, []string{"a/a-2"}) {
		t.Fatalf("after unsubscribeLite b: %v, want only a-2", b)
	}
	if held := n.Broker().Core().LiteHeld(topic, "b"); held != 1 {
		t.Fatalf("lite topic b holds %d, want b-2 kept for a subscriber", held)
	}

	// close: NotifyClientTermination drops the client's subscriptions.
	if r, err := c.NotifyClientTermination(ctx, &v2.NotifyClientTerminationRequest{Group: &v2.Resource{Name: group}}); err != nil ||
		r.GetStatus().GetCode() != v2.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", r, err)
	}
	if got := n.Broker().Core().LiteSubscriptions(group, client); len(got) != 0 {
		t.Fatalf("subscriptions after close: %v", got)
	}
}
