package process_test

// Issue 16: what the Java client and mqadmin ask for beyond the Go
// client's everyday path, driven with raw frames in RocketMQ's layouts
// (the Java client's header fields, see RocketMQ's MQClientAPIImpl) and,
// where it has the feature, the official Go client.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/adminbody"
	"github.com/wheelmq/wheelmq/storage/message"
)

// rawClient is a remoting connection that records the requests the broker
// sends it (220, 326, ...) and answers them with code 0.
type rawClient struct {
	*remoting.Client
	mu   sync.Mutex
	got  []*remoting.Command
	seen chan struct{}
}

func dialClient(t *testing.T, addr string) *rawClient {
	t.Helper()
	rc := &rawClient{seen: make(chan struct{}, 16)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{OnRequest: func(req *remoting.Command) *remoting.Command {
		rc.mu.Lock()
		rc.got = append(rc.got, req)
		rc.mu.Unlock()
		select {
		case rc.seen <- struct{}{}:
		default:
		}
		return remoting.NewResponse(req, remoting.Success, "")
	}})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	rc.Client = c
	t.Cleanup(func() { _ = c.Close() })
	return rc
}

// waitRequest waits until the broker has sent a request with code.
func (rc *rawClient) waitRequest(t *testing.T, code int32, within time.Duration) *remoting.Command {
	t.Helper()
	deadline := time.After(within)
	for {
		rc.mu.Lock()
		for _, r := range rc.got {
			if r.Code == code {
				rc.mu.Unlock()
				return r
			}
		}
		rc.mu.Unlock()
		select {
		case <-rc.seen:
		case <-deadline:
			t.Fatalf("no request %d from the broker within %s", code, within)
		}
	}
}

// invoke sends req on the connection and returns the answer.
func (rc *rawClient) invoke(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("invoke %d: %v", req.Code, err)
	}
	return resp
}

// heartbeat registers the connection as client id with a producer group
// and, when group is set, as a clustering consumer of group on topic.
func (rc *rawClient) heartbeat(t *testing.T, id, group, topic string) {
	t.Helper()
	hb := map[string]any{"clientID": id, "producerDataSet": []map[string]string{{"groupName": id + "-pg"}}}
	if group != "" {
		hb["consumerDataSet"] = []map[string]any{{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": false,
			"subscriptionDataSet": []map[string]any{{"topic": topic, "subString": "*", "tagsSet": []string{},
				"codeSet": []int{}, "subVersion": 1, "classFilterMode": false}},
		}}
	}
	body, _ := json.Marshal(hb)
	mustOK(t, "heartbeat", rc.invoke(t, remoting.NewRequest(remoting.HeartBeat, nil, body)))
}

// litePull is LITE_PULL_MESSAGE (361) as DefaultLitePullConsumer sends it:
// sysFlag = SUSPEND | SUBSCRIPTION | LITE_PULL (22), no commit offset, the
// subscription posted with the pull, suspended up to suspendMillis.
func litePull(group, topic string, queueID int32, offset int64, suspendMillis int) *remoting.Command {
	return remoting.NewRequest(remoting.LitePullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(queueID)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": "22",
		"commitOffset": "0", "suspendTimeoutMillis": strconv.Itoa(suspendMillis),
		"subscription": "*", "subVersion": strconv.FormatInt(time.Now().UnixMilli(), 10), "expressionType": "TAG",
		"maxMsgBytes": "2147483647", "bname": "broker-a",
	}, nil)
}

func sendRaw(t *testing.T, addr, topic string, queueID int32, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		mustOK(t, "send "+b, call(t, addr, remoting.SendMessage, processtest.SendRequest(topic, queueID, []byte(b), nil).ExtFields, []byte(b)))
	}
}

// TestLitePullMessage: 361 is served as PULL_MESSAGE is, long polling
// included: DefaultLitePullConsumer receives what is stored.
func TestLitePullMessage(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("lite"), processtest.Unique("litegroup")
	processtest.CreateTopic(t, n, topic, 1)
	sendRaw(t, n.BrokerAddr(), topic, 0, "m0", "m1", "m2")

	rc := dialClient(t, n.BrokerAddr())
	resp := mustOK(t, "lite pull", rc.invoke(t, litePull(group, topic, 0, 0, 0)))
	recs, err := processtest.DecodeMessages(resp.Body)
	if err != nil || len(recs) != 3 || string(recs[0].Body) != "m0" || string(recs[2].Body) != "m2" {
		t.Fatalf("lite pull from 0: %d records, %v", len(recs), err)
	}
	if got := resp.Field("nextBeginOffset"); got != "3" {
		t.Fatalf("nextBeginOffset = %q, want 3", got)
	}

	// At the end of the queue it is parked and woken by the next arrival.
	type answer struct {
		resp *remoting.Command
		at   time.Time
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := rc.Invoke(ctx, litePull(group, topic, 0, 3, 20000))
		if err != nil {
			r = remoting.NewResponse(litePull(group, topic, 0, 3, 0), -1, err.Error())
		}
		done <- answer{r, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	sendRaw(t, n.BrokerAddr(), topic, 0, "m3")
	a := <-done
	if a.resp.Code != remoting.Success {
		t.Fatalf("parked lite pull: code %d %q", a.resp.Code, a.resp.Remark)
	}
	if recs, _ := processtest.DecodeMessages(a.resp.Body); len(recs) != 1 || string(recs[0].Body) != "m3" {
		t.Fatalf("parked lite pull got %d records", len(recs))
	}
	t.Logf("parked lite pull answered %s after the send", a.at.Sub(sent).Round(time.Millisecond))

	// Its offsets are its own: UPDATE/QUERY_CONSUMER_OFFSET as the lite
	// consumer's offset store sends them.
	mustOK(t, "commit", rc.invoke(t, remoting.NewRequest(remoting.UpdateConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "4"}, nil)))
	q := mustOK(t, "query offset", rc.invoke(t, remoting.NewRequest(remoting.QueryConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0"}, nil)))
	if q.Field("offset") != "4" {
		t.Fatalf("committed offset = %q, want 4", q.Field("offset"))
	}
}

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

// TestResetReachesConsumersAtOnce: INVOKE_BROKER_TO_RESET_OFFSET sends
// RESET_CONSUMER_CLIENT_OFFSET to the group's live consumers and answers
// their parked long polls at once; a pull at the reset offset is served.
func TestResetReachesConsumersAtOnce(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("reset"), processtest.Unique("resetgroup")
	processtest.CreateTopic(t, n, topic, 1)
	sendRaw(t, n.BrokerAddr(), topic, 0, "a", "b", "c", "d")

	cons := dialClient(t, n.BrokerAddr())
	cons.heartbeat(t, "consumer-1", group, topic)
	mustOK(t, "commit", cons.invoke(t, remoting.NewRequest(remoting.UpdateConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "4"}, nil)))

	// The consumer's long poll at the end, parked for up to 20 s.
	parked := make(chan *remoting.Command, 1)
	go func() {
		req := processtest.PullRequest(group, topic, 0, 4, 32)
		req.SetField("sysFlag", "2")
		req.SetField("suspendTimeoutMillis", "20000")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := cons.Invoke(ctx, req)
		if err != nil {
			r = remoting.NewResponse(req, -1, err.Error())
		}
		parked <- r
	}()
	time.Sleep(300 * time.Millisecond)

	start := time.Now()
	resp := mustOK(t, "reset", call(t, n.BrokerAddr(), remoting.InvokeBrokerToResetOffset, map[string]string{
		"topic": topic, "group": group, "timestamp": "0", "isForce": "true", "queueId": "0", "offset": "1"}, nil))
	if _, err := adminbody.DecodeResetOffsetBody(resp.Body); err != nil {
		t.Fatalf("reset answer body: %v", err)
	}
	push := cons.waitRequest(t, remoting.ResetConsumerClientOffset, time.Second)
	if push.Field("topic") != topic || push.Field("group") != group || push.Field("isForce") == "" || push.Field("timestamp") == "" {
		t.Fatalf("220 header %v", push.ExtFields)
	}
	body, err := adminbody.DecodeResetOffsetBody(push.Body)
	if err != nil {
		t.Fatalf("220 body: %v", err)
	}
	var got []int64
	for mq, off := range body.OffsetTable {
		if mq.Topic != topic || mq.QueueID != 0 || mq.BrokerName == "" {
			t.Fatalf("220 names queue %+v", mq)
		}
		got = append(got, off)
	}
	if !slices.Equal(got, []int64{1}) {
		t.Fatalf("220 offsets %v, want [1]", got)
	}
	select {
	case r := <-parked:
		if r.Code != remoting.PullOffsetMoved || r.Field("nextBeginOffset") != "1" {
			t.Fatalf("parked pull: code %d next %q", r.Code, r.Field("nextBeginOffset"))
		}
		t.Logf("220 and the parked pull's OFFSET_MOVED reached the consumer %s after the reset", time.Since(start).Round(time.Millisecond))
	case <-time.After(time.Second):
		t.Fatal("the parked long poll was not answered within a second of the reset")
	}
	// The consumer re-reads from the reset offset.
	r := mustOK(t, "pull at the reset offset", cons.invoke(t, processtest.PullRequest(group, topic, 0, 1, 32)))
	recs, _ := processtest.DecodeMessages(r.Body)
	if len(recs) != 3 || string(recs[0].Body) != "b" {
		t.Fatalf("pull at the reset offset: %d records", len(recs))
	}
}

// TestTopicConsumeByWho: 300 lists the groups subscribed online and those
// with committed offsets, as RocketMQ's GroupList.
func TestTopicConsumeByWho(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("who")
	processtest.CreateTopic(t, n, topic, 1)
	online, committed := processtest.Unique("online"), processtest.Unique("committed")
	cons := dialClient(t, n.BrokerAddr())
	cons.heartbeat(t, "who-consumer", online, topic)
	mustOK(t, "commit", cons.invoke(t, remoting.NewRequest(remoting.UpdateConsumerOffset,
		map[string]string{"consumerGroup": committed, "topic": topic, "queueId": "0", "commitOffset": "0"}, nil)))

	eventually(t, "QUERY_TOPIC_CONSUME_BY_WHO", 5*time.Second, func() error {
		resp := call(t, n.BrokerAddr(), remoting.QueryTopicConsumeByWho, map[string]string{"topic": topic}, nil)
		if resp.Code != remoting.Success {
			return fmt.Errorf("code %d %q", resp.Code, resp.Remark)
		}
		var gl struct {
			GroupList []string `json:"groupList"`
		}
		if err := json.Unmarshal(resp.Body, &gl); err != nil {
			return err
		}
		want := []string{committed, online}
		slices.Sort(want)
		if !slices.Equal(gl.GroupList, want) {
			return fmt.Errorf("groups %v, want %v", gl.GroupList, want)
		}
		return nil
	})
	resp := call(t, n.BrokerAddr(), remoting.QueryTopicConsumeByWho, map[string]string{"topic": "nobody-reads-this"}, nil)
	if resp.Code != remoting.Success || string(resp.Body) != `{"groupList":[]}` {
		t.Fatalf("unknown topic: code %d body %s", resp.Code, resp.Body)
	}
	if resp := call(t, n.BrokerAddr(), remoting.QueryTopicConsumeByWho, nil, nil); resp.Code == remoting.Success {
		t.Fatal("300 without a topic was answered SUCCESS")
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

// TestResetOfficialPushConsumer: an official Go push consumer online
// during a reset consumes again from the reset offset. The broker tells it
// at once (TestResetReachesConsumersAtOnce); the client itself pauses the
// queue for 10 s on RESET_CONSUMER_CLIENT_OFFSET and on OFFSET_MOVED, as
// the Java client does, and takes it up again at its next rebalance.
func TestResetOfficialPushConsumer(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("resetpush"), processtest.Unique("resetpushgroup")
	processtest.CreateTopic(t, n, topic, 1)
	sendRaw(t, n.BrokerAddr(), topic, 0, "a", "b", "c", "d")
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	if !rec.WaitFor(4, 30*time.Second) {
		t.Fatalf("consumed %d of 4 before the reset", rec.Len())
	}
	time.Sleep(500 * time.Millisecond) // its long poll parks at offset 4
	start := time.Now()
	mustOK(t, "reset", call(t, n.BrokerAddr(), remoting.InvokeBrokerToResetOffset, map[string]string{
		"topic": topic, "group": group, "timestamp": "0", "isForce": "true", "queueId": "0", "offset": "1"}, nil))
	again := func(msgs []*primitive.MessageExt) bool {
		seen := 0
		for _, m := range msgs {
			if string(m.Body) == "b" {
				seen++
			}
		}
		return seen >= 2
	}
	if !rec.WaitUntil(again, 45*time.Second) {
		t.Fatalf("the consumer did not consume offset 1 again within 45 s of the reset (%d messages)", rec.Len())
	}
	t.Logf("the official Go push consumer re-read from the reset offset %s after the reset", time.Since(start).Round(time.Millisecond))
	if n := rec.Len(); n > 8 {
		t.Fatalf("consumed %d messages: more than the 4 + 3 replayed (and one duplicate at most)", n)
	}
}

// TestConsumeMessageDirectly: 309 (the dashboard's resend) hands the stored
// message to the named official Go consumer, which consumes it again and
// answers; the answer is relayed to the admin.
func TestConsumeMessageDirectly(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("direct"), processtest.Unique("directgroup")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("again")))
	if err != nil {
		t.Fatal(err)
	}
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	if !rec.WaitFor(1, 30*time.Second) {
		t.Fatal("not consumed")
	}
	conns := mustOK(t, "consumer connections", call(t, n.BrokerAddr(), remoting.GetConsumerConnectionList,
		map[string]string{"consumerGroup": group}, nil))
	cc, err := adminbody.DecodeConsumerConnection(conns.Body)
	if err != nil || len(cc.ConnectionSet) != 1 {
		t.Fatalf("connections %+v %v", cc, err)
	}
	resp := mustOK(t, "consume directly", call(t, n.BrokerAddr(), remoting.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": group, "clientId": cc.ConnectionSet[0].ClientID, "msgId": res.OffsetMsgID, "topic": topic}, nil))
	var result struct {
		ConsumeResult json.RawMessage `json:"consumeResult"` // the Go client sends the ordinal: 0 is CR_SUCCESS
	}
	if err := json.Unmarshal(resp.Body, &result); err != nil || (string(result.ConsumeResult) != "0" && string(result.ConsumeResult) != `"CR_SUCCESS"`) {
		t.Fatalf("ConsumeMessageDirectlyResult %s (%v)", resp.Body, err)
	}
	if !rec.WaitFor(2, 5*time.Second) {
		t.Fatalf("consumed %d times, want 2", rec.Len())
	}
	resp = call(t, n.BrokerAddr(), remoting.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": group, "clientId": "nobody@1", "msgId": res.OffsetMsgID}, nil)
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "not online") {
		t.Fatalf("unknown client: code %d %q", resp.Code, resp.Remark)
	}
}

// TestSmallAdminRequests: 305, 328, 343, 345 and 352 in RocketMQ's layouts.
func TestSmallAdminRequests(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("small"), processtest.Unique("smallgroup")
	processtest.CreateTopic(t, n, topic, 1)
	cl := dialClient(t, n.BrokerAddr())
	cl.heartbeat(t, "small-1", group, topic)
	mustOK(t, "commit", cl.invoke(t, remoting.NewRequest(remoting.UpdateConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "0"}, nil)))

	var tl struct {
		BrokerAddr string   `json:"brokerAddr"`
		TopicList  []string `json:"topicList"`
	}
	decode := func(what string, resp *remoting.Command, v any) {
		t.Helper()
		mustOK(t, what, resp)
		if err := json.Unmarshal(resp.Body, v); err != nil {
			t.Fatalf("%s body %s: %v", what, resp.Body, err)
		}
	}
	decode("305", call(t, n.BrokerAddr(), remoting.GetSystemTopicListFromBroker, nil, nil), &tl)
	for _, want := range []string{"RMQ_SYS_TRANS_HALF_TOPIC", "SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC"} {
		if !slices.Contains(tl.TopicList, want) {
			t.Errorf("305 lacks %s: %v", want, tl.TopicList)
		}
	}
	tl.TopicList = nil
	decode("343", call(t, n.BrokerAddr(), remoting.QueryTopicsByConsumer, map[string]string{"group": group}, nil), &tl)
	if !slices.Equal(tl.TopicList, []string{topic}) || tl.BrokerAddr != n.Broker().Advertise() {
		t.Errorf("343: %+v", tl)
	}
	var producers adminbody.ProducerTableInfo
	decode("328", call(t, n.BrokerAddr(), remoting.GetAllProducerInfo, nil, nil), &producers)
	if ps := producers.Data["small-1-pg"]; len(ps) != 1 || ps[0].ClientID != "small-1" || ps[0].LastUpdateTimestamp == 0 {
		t.Errorf("328: %+v", producers)
	}
	var sub struct {
		Group            string                      `json:"group"`
		Topic            string                      `json:"topic"`
		SubscriptionData *adminbody.SubscriptionData `json:"subscriptionData"`
	}
	decode("345", call(t, n.BrokerAddr(), remoting.QuerySubscriptionByConsumer, map[string]string{"group": group, "topic": topic}, nil), &sub)
	if sub.SubscriptionData == nil || sub.SubscriptionData.SubString != "*" || sub.Group != group {
		t.Errorf("345: %+v", sub)
	}
	var gc struct {
		GroupName     string `json:"groupName"`
		RetryMaxTimes int    `json:"retryMaxTimes"`
	}
	decode("352", call(t, n.BrokerAddr(), remoting.GetSubscriptionGroupConfig, map[string]string{"group": group}, nil), &gc)
	if gc.GroupName != group || gc.RetryMaxTimes != 16 {
		t.Errorf("352: %+v", gc)
	}
	if resp := call(t, n.BrokerAddr(), remoting.GetSubscriptionGroupConfig, map[string]string{"group": "no-such-group"}, nil); resp.Code != remoting.SubscriptionGroupNotExist {
		t.Errorf("352 of an unknown group: code %d", resp.Code)
	}
}
