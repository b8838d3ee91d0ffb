package process_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// liteRemoting is one remoting connection of a lite consumer: its
// subscriptions live as long as the connection.
type liteRemoting struct {
	t                    *testing.T
	c                    *remoting.Client
	client, group, topic string
}

func (l *liteRemoting) invoke(req *remoting.Command) *remoting.Command {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := l.c.Invoke(ctx, req)
	if err != nil {
		l.t.Fatalf("invoke %d: %v", req.Code, err)
	}
	return resp
}

// ctl sends LITE_SUBSCRIPTION_CTL with one LiteSubscriptionDTO.
func (l *liteRemoting) ctl(action string, lites ...string) *remoting.Command {
	l.t.Helper()
	body, err := json.Marshal(map[string]any{"subscriptionSet": []map[string]any{{
		"action": action, "clientId": l.client, "group": l.group, "topic": l.topic, "liteTopicSet": lites, "version": 1}}})
	if err != nil {
		l.t.Fatal(err)
	}
	return l.invoke(remoting.NewRequest(remoting.LiteSubscriptionCtl, nil, body))
}

// popLite sends POP_LITE_MESSAGE and decodes the records of its answer.
func (l *liteRemoting) popLite(max int, pollMs int64) (*remoting.Command, []message.Record) {
	l.t.Helper()
	resp := l.invoke(remoting.NewRequest(remoting.PopLiteMessage, map[string]string{
		"clientId": l.client, "consumerGroup": l.group, "topic": l.topic, "maxMsgNum": strconv.Itoa(max),
		"invisibleTime": "30000", "pollTime": strconv.FormatInt(pollMs, 10),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10)}, nil))
	var recs []message.Record
	for b := resp.Body; len(b) > 0; {
		r, n, err := message.Decode(b)
		if err != nil {
			l.t.Fatalf("decode the pop's body: %v", err)
		}
		recs = append(recs, r)
		b = b[n:]
	}
	return resp, recs
}

// ack sends ACK_MESSAGE with the record's receipt handle as extraInfo.
func (l *liteRemoting) ack(r message.Record) *remoting.Command {
	l.t.Helper()
	return l.invoke(remoting.NewRequest(remoting.AckMessage, map[string]string{"consumerGroup": l.group, "topic": l.topic,
		"queueId": "0", "offset": strconv.FormatInt(r.QueueOffset, 10), "extraInfo": handleOf(l.t, r)}, nil))
}

func handleOf(t *testing.T, r message.Record) string {
	t.Helper()
	h := message.DecodeProperties(r.Properties)[pop.PropPopCK]
	if h == "" {
		t.Fatalf("record %s has no %s", r.Body, pop.PropPopCK)
	}
	return h
}

func names(recs []message.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, message.DecodeProperties(r.Properties)[message.PropLiteTopic]+"/"+string(r.Body))
	}
	slices.Sort(out)
	return out
}

// TestLitePopOverRemoting: RocketMQ 5.5's remoting lite consumer
// requests, raw over one connection: LITE_SUBSCRIPTION_CTL (200071) with
// a LiteSubscriptionCtlRequestBody subscribes the client to lite topics;
// POP_LITE_MESSAGE (200070) answers the oldest message of each, one in
// flight per lite topic, the records in the body with POP_CK, their lite
// topic's LMQ and offset (INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET)
// and orderCountInfo, nothing of an unsubscribed lite topic, POLLING_TIMEOUT
// when nothing is deliverable; ACK_MESSAGE with the handle releases the
// next; CHANGE_MESSAGE_INVISIBLETIME answers a new handle in extraInfo
// (the old one refused); bad input is refused and changes nothing; the
// connection's close drops its subscriptions.
func TestLitePopOverRemoting(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{})
	topic, normal := processtest.Unique("lite_remoting"), processtest.Unique("lite_remoting_normal")
	for tp, attrs := range map[string]string{topic: "+message.type=LITE", normal: "+message.type=NORMAL"} {
		if r := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": tp, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "attributes": attrs,
		}, nil)); r.Code != remoting.Success {
			t.Fatalf("create topic %s: %d %s", tp, r.Code, r.Remark)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	l := &liteRemoting{t: t, c: c, client: "remoting@lite@1", group: processtest.Unique("lite_remoting_cg"), topic: topic}
	core := n.Broker().Core()

	// Bad input: refused, nothing subscribed.
	if r := l.invoke(remoting.NewRequest(remoting.LiteSubscriptionCtl, nil, nil)); r.Code != remoting.IllegalOperation {
		t.Fatalf("no body: %d %s", r.Code, r.Remark)
	}
	if r := l.invoke(remoting.NewRequest(remoting.LiteSubscriptionCtl, nil, []byte(`{"subscriptionSet":[]}`))); r.Code != remoting.IllegalOperation {
		t.Fatalf("empty set: %d %s", r.Code, r.Remark)
	}
	if r := l.ctl("SUBSCRIBE", "a"); r.Code != remoting.IllegalOperation {
		t.Fatalf("unknown action: %d %s", r.Code, r.Remark)
	}
	bad := *l
	bad.topic = normal
	if r := bad.ctl("PARTIAL_ADD", "a"); r.Code == remoting.Success {
		t.Fatal("a subscription bound to a NORMAL topic was taken")
	}
	if r, _ := bad.popLite(4, 0); r.Code != remoting.InvalidParameter {
		t.Fatalf("pop of a NORMAL topic: %d %s", r.Code, r.Remark)
	}
	if r, _ := l.popLite(33, 0); r.Code != remoting.InvalidParameter {
		t.Fatalf("pop of 33: %d %s", r.Code, r.Remark)
	}
	if got := core.LiteSubscriptions(l.group, l.client); len(got) != 0 {
		t.Fatalf("subscriptions after refusals: %v", got)
	}

	if r := l.ctl("PARTIAL_ADD", "a", "b"); r.Code != remoting.Success {
		t.Fatalf("subscribe: %d %s", r.Code, r.Remark)
	}
	for _, m := range [][2]string{{"a", "a-0"}, {"c", "c-0"}, {"b", "b-0"}, {"a", "a-1"}} {
		r := processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(topic, -1, []byte(m[1]),
			map[string]string{message.PropLiteTopic: m[0], message.PropUniqKey: processtest.Unique("uk")}))
		if r.Code != remoting.Success {
			t.Fatalf("send %s: %d %s", m[1], r.Code, r.Remark)
		}
	}
	resp, recs := l.popLite(32, 5000)
	if resp.Code != remoting.Success || !slices.Equal(names(recs), []string{"a/a-0", "b/b-0"}) {
		t.Fatalf("first pop: %d %s %v, want a-0 and b-0", resp.Code, resp.Remark, names(recs))
	}
	if oc := resp.Field("orderCountInfo"); oc != "0;0" || resp.Field("invisibleTime") != "30000" || resp.Field("popTime") == "" {
		t.Fatalf("answer header: orderCountInfo %q, invisibleTime %q, popTime %q", oc, resp.Field("invisibleTime"), resp.Field("popTime"))
	}
	for _, r := range recs {
		props := message.DecodeProperties(r.Properties)
		lite := props[message.PropLiteTopic]
		if props[message.PropInnerMultiDispatch] != "%LMQ%$"+topic+"$"+lite || props[message.PropInnerMultiQueueOffset] != "0" {
			t.Fatalf("%s: INNER_MULTI_DISPATCH %q, INNER_MULTI_QUEUE_OFFSET %q, want its lite topic's LMQ and offset 0",
				r.Body, props[message.PropInnerMultiDispatch], props[message.PropInnerMultiQueueOffset])
		}
	}
	var a0, b0 message.Record
	for _, r := range recs {
		if string(r.Body) == "a-0" {
			a0 = r
		} else {
			b0 = r
		}
	}
	if r := l.ack(a0); r.Code != remoting.Success {
		t.Fatalf("ack a-0: %d %s", r.Code, r.Remark)
	}
	if r := l.ack(a0); r.Code == remoting.Success {
		t.Fatal("a second ack of a-0 was taken")
	}
	if resp, recs := l.popLite(32, 5000); resp.Code != remoting.Success || !slices.Equal(names(recs), []string{"a/a-1"}) ||
		message.DecodeProperties(recs[0].Properties)[message.PropInnerMultiQueueOffset] != "1" {
		t.Fatalf("after the ack: %d %v, want only a-1, the second of its lite topic (offset 1)", resp.Code, names(recs))
	}

	// CHANGE_MESSAGE_INVISIBLETIME: a new handle in extraInfo.
	ch := l.invoke(remoting.NewRequest(remoting.ChangeMessageInvisibleTime, map[string]string{"consumerGroup": l.group,
		"topic": topic, "queueId": "0", "offset": strconv.FormatInt(b0.QueueOffset, 10), "extraInfo": handleOf(t, b0),
		"invisibleTime": "0"}, nil))
	nh := ch.Field("extraInfo")
	if ch.Code != remoting.Success || nh == "" || nh == handleOf(t, b0) {
		t.Fatalf("change b-0: %d %s, new handle %q", ch.Code, ch.Remark, nh)
	}
	if r := l.ack(b0); r.Code == remoting.Success {
		t.Fatal("the changed-away handle of b-0 was taken")
	}
	resp, recs = l.popLite(32, 5000)
	if resp.Code != remoting.Success || !slices.Equal(names(recs), []string{"b/b-0"}) || resp.Field("orderCountInfo") != "1" {
		t.Fatalf("after the change to 0: %d %v (orderCountInfo %q), want b-0 again, delivered once before",
			resp.Code, names(recs), resp.Field("orderCountInfo"))
	}
	if r := l.ack(recs[0]); r.Code != remoting.Success {
		t.Fatalf("ack b-0: %d %s", r.Code, r.Remark)
	}

	// Nothing deliverable: POLLING_TIMEOUT after the poll, never early.
	began := time.Now()
	if resp, recs := l.popLite(32, 300); resp.Code != pop.CodePollingTimeout || len(recs) != 0 {
		t.Fatalf("empty pop: %d %s %v", resp.Code, resp.Remark, names(recs))
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Fatalf("the empty pop answered after %v, before its poll of 300ms", took)
	}

	// The connection's close drops the client's subscriptions.
	if got := core.LiteSubscriptions(l.group, l.client); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("subscriptions %v, want [a b]", got)
	}
	_ = c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(core.LiteSubscriptions(l.group, l.client)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions still %v 10 s after the connection closed", core.LiteSubscriptions(l.group, l.client))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
