package process_test

// Issue 16: request/reply, the broker pushing each reply to its requester
// (PUSH_REPLY_MESSAGE_TO_CLIENT, 326).

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// replyRequest is SEND_REPLY_MESSAGE (324) of a responder answering the
// request whose CORRELATION_ID is corr, from requester replyTo.
func replyRequest(cluster, replyTo, corr, body string) *remoting.Command {
	props := map[string]string{
		message.PropMsgType: "reply", message.PropCorrelationID: corr, message.PropReplyToClient: replyTo,
		message.PropTTL: "3", message.PropCluster: cluster, message.PropUniqKey: processtest.Unique("uniq"),
	}
	req := processtest.SendRequest(cluster+"_REPLY_TOPIC", 0, []byte(body), props)
	req.Code = remoting.SendReplyMessage
	return req
}

// TestReplyPushedToRequester: a reply is stored and pushed at once to the
// requester's own connection with RocketMQ's 326 header; a reply whose
// requester is not connected is answered SYSTEM_ERROR naming it.
func TestReplyPushedToRequester(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	requester := dialClient(t, n.BrokerAddr())
	requester.heartbeat(t, "requester-1", "", "")

	resp := call(t, n.BrokerAddr(), remoting.SendReplyMessage, replyRequest("DefaultCluster", "requester-1", "corr-1", "the answer").ExtFields, []byte("the answer"))
	mustOK(t, "reply send", resp)
	if resp.Field("msgId") == "" || resp.Field("queueOffset") == "" {
		t.Fatalf("reply answer lacks msgId/queueOffset: %v", resp.ExtFields)
	}
	push := requester.waitRequest(t, remoting.PushReplyMessageToClient, 2*time.Second)
	javaKeys(t, "push_reply_message_to_client_326", push)
	if string(push.Body) != "the answer" {
		t.Fatalf("pushed body %q", push.Body)
	}
	props := message.DecodeProperties([]byte(push.Field("properties")))
	if props[message.PropCorrelationID] != "corr-1" || props[message.PropPushReplyTime] == "" {
		t.Fatalf("pushed properties %v", props)
	}
	for _, k := range []string{"producerGroup", "topic", "queueId", "sysFlag", "bornTimestamp", "flag",
		"reconsumeTimes", "bornHost", "storeHost", "storeTimestamp"} {
		if push.Field(k) == "" {
			t.Errorf("326 header lacks %s: %v", k, push.ExtFields)
		}
	}
	if push.Field("topic") != "DefaultCluster_REPLY_TOPIC" || push.Field("storeHost") != n.Broker().Advertise() {
		t.Errorf("326 topic %q storeHost %q", push.Field("topic"), push.Field("storeHost"))
	}

	// Stored too: the reply topic holds it.
	rc := dialClient(t, n.BrokerAddr())
	eventually(t, "the reply stored", 5*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		recs, err := processtest.ReadQueue(ctx, rc.Client, "DefaultCluster_REPLY_TOPIC", 0)
		if err != nil || len(recs) != 1 || string(recs[0].Body) != "the answer" {
			return fmt.Errorf("reply topic holds %d records (%v)", len(recs), err)
		}
		return nil
	})

	// A requester that is not connected: RocketMQ's answer.
	resp = call(t, n.BrokerAddr(), remoting.SendReplyMessage, replyRequest("DefaultCluster", "gone-9", "corr-2", "late").ExtFields, []byte("late"))
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "channel of <gone-9> not found") {
		t.Fatalf("reply to an absent requester: code %d %q", resp.Code, resp.Remark)
	}
}

// TestRequestReplyOfficialClient: the official Go client's
// Producer.Request and RequestAsync get the responder's reply, which the
// broker pushes to the requester (they timed out before).
func TestRequestReplyOfficialClient(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("rpc")
	processtest.CreateTopic(t, n, topic, 2)
	responder := processtest.Producer(t, n.NamesrvAddr())
	var replyErrs sync.Map
	respond := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err == nil {
				// The Go client's CreateReplyMessage reads its body argument
				// as properties and leaves Body empty: set it here.
				reply.Body = []byte("re:" + string(m.Body))
				_, err = responder.SendSync(context.Background(), reply)
			}
			if err != nil {
				replyErrs.Store(string(m.Body), err)
			}
		}
		return consumer.ConsumeSuccess, nil
	}
	c, err := consumer.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{n.NamesrvAddr()})),
		consumer.WithGroupName(processtest.Unique("rpcserver")), consumer.WithInstance(processtest.Unique("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, respond); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })

	requester, err := producer.NewDefaultProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{n.NamesrvAddr()})),
		producer.WithGroupName(processtest.Unique("rpcclient")), producer.WithInstanceName(processtest.Unique("p")))
	if err != nil {
		t.Fatal(err)
	}
	if err := requester.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = requester.Shutdown() })

	var lat []time.Duration
	for i := range 5 {
		body := fmt.Sprintf("ask-%d", i)
		start := time.Now()
		reply, err := requester.Request(context.Background(), 10*time.Second, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			e, _ := replyErrs.Load(body)
			t.Fatalf("Request %s: %v (responder: %v)", body, err, e)
		}
		lat = append(lat, time.Since(start))
		if string(reply.Body) != "re:"+body {
			t.Fatalf("Request %s: reply %q", body, reply.Body)
		}
	}
	t.Logf("Request round trips: %v", lat)

	got := make(chan string, 1)
	err = requester.RequestAsync(context.Background(), 10*time.Second, func(_ context.Context, m *primitive.Message, err error) {
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(m.Body)
	}, primitive.NewMessage(topic, []byte("async")))
	if err != nil {
		t.Fatalf("RequestAsync: %v", err)
	}
	select {
	case r := <-got:
		if r != "re:async" {
			t.Fatalf("RequestAsync got %q", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("RequestAsync: no reply in 15 s")
	}
}
