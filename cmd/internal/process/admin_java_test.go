package process_test

// Issue 16: the admin requests of mqadmin and rocketmq-dashboard that the
// Go admin API lacks: offset resets announced to consumers (220), 300,
// 305, 309, 328, 343, 345, 352.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

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
	javaKeys(t, "reset_consumer_client_offset_220", push)
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

// TestResetOfficialPushConsumer: an official Go push consumer online
// during a reset consumes again from the reset offset. The broker tells it
// at once (TestResetReachesConsumersAtOnce); the client itself pauses the
// queue for 10 s on RESET_CONSUMER_CLIENT_OFFSET and on OFFSET_MOVED, as
// the Java client does, and takes it up again at its next rebalance.
func TestResetOfficialPushConsumer(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
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

// TestCreateListsOfTopicsAndGroups: 18 and 225 as mqadmin updateTopicList
// and updateSubGroupList send them; a bad entry refuses the whole list.
func TestCreateListsOfTopicsAndGroups(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	t1, t2 := processtest.Unique("list"), processtest.Unique("list")
	body := fmt.Sprintf(`{"topicConfigList":[{"topicName":"%s","readQueueNums":2,"writeQueueNums":2,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{}},`+
		`{"topicName":"%s","readQueueNums":"3","writeQueueNums":"3","perm":"6"}]}`, t1, t2)
	mustOK(t, "18", call(t, n.BrokerAddr(), remoting.UpdateAndCreateTopicList, nil, []byte(body)))
	for topic, queues := range map[string]string{t1: "2", t2: "3"} {
		// Answered once routed: the route is there at once.
		resp := call(t, n.NamesrvAddr(), remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
		if resp.Code != remoting.Success || !strings.Contains(string(resp.Body), `"writeQueueNums":`+queues) {
			t.Fatalf("route of %s right after 18: %d %s", topic, resp.Code, resp.Body)
		}
	}
	bad := fmt.Sprintf(`{"topicConfigList":[{"topicName":"%s","readQueueNums":1,"writeQueueNums":1,"perm":6},{"topicName":"bad topic","readQueueNums":1,"writeQueueNums":1,"perm":6}]}`,
		processtest.Unique("never"))
	if resp := call(t, n.BrokerAddr(), remoting.UpdateAndCreateTopicList, nil, []byte(bad)); resp.Code != remoting.InvalidParameter || !strings.Contains(resp.Remark, "topic 1") {
		t.Fatalf("a list with a bad topic: %d %q", resp.Code, resp.Remark)
	}

	g1, g2 := processtest.Unique("lg"), processtest.Unique("lg")
	gbody := fmt.Sprintf(`{"groupConfigList":[{"groupName":"%s","retryMaxTimes":3},{"groupName":"%s","consumeEnable":false}]}`, g1, g2)
	mustOK(t, "225", call(t, n.BrokerAddr(), remoting.UpdateAndCreateGroupList, nil, []byte(gbody)))
	for g, check := range map[string]string{g1: `"retryMaxTimes":3`, g2: `"consumeEnable":false`} {
		resp := mustOK(t, "352", call(t, n.BrokerAddr(), remoting.GetSubscriptionGroupConfig, map[string]string{"group": g}, nil))
		if !strings.Contains(string(resp.Body), check) {
			t.Fatalf("group %s: %s", g, resp.Body)
		}
	}
	if resp := call(t, n.BrokerAddr(), remoting.UpdateAndCreateGroupList, nil, []byte(`{"groupConfigList":[{"groupName":""}]}`)); resp.Code != remoting.InvalidParameter {
		t.Fatalf("a list with a blank group: %d %q", resp.Code, resp.Remark)
	}
}

// TestCloneGroupOffset: 314 copies one group's offsets to another.
func TestCloneGroupOffset(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, src, dest := processtest.Unique("clone"), processtest.Unique("src"), processtest.Unique("dest")
	processtest.CreateTopic(t, n, topic, 2)
	for q, off := range map[string]string{"0": "3", "1": "5"} {
		mustOK(t, "commit", call(t, n.BrokerAddr(), remoting.UpdateConsumerOffset,
			map[string]string{"consumerGroup": src, "topic": topic, "queueId": q, "commitOffset": off}, nil))
	}
	mustOK(t, "314", call(t, n.BrokerAddr(), remoting.CloneGroupOffset,
		map[string]string{"srcGroup": src, "destGroup": dest, "topic": topic, "offline": "false"}, nil))
	for q, want := range map[string]string{"0": "3", "1": "5"} {
		resp := mustOK(t, "query", call(t, n.BrokerAddr(), remoting.QueryConsumerOffset,
			map[string]string{"consumerGroup": dest, "topic": topic, "queueId": q}, nil))
		if resp.Field("offset") != want {
			t.Fatalf("cloned offset of queue %s = %q, want %s", q, resp.Field("offset"), want)
		}
	}
}

// TestBrokerConsumeStats: 317 (mqadmin brokerConsumeStats) lists every
// group's progress with the total lag.
func TestBrokerConsumeStats(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("bcs"), processtest.Unique("bcsgroup")
	processtest.CreateTopic(t, n, topic, 2)
	sendRaw(t, n.BrokerAddr(), topic, 0, "a", "b", "c")
	sendRaw(t, n.BrokerAddr(), topic, 1, "d")
	mustOK(t, "create group", call(t, n.BrokerAddr(), remoting.UpdateAndCreateSubscriptionGroup, nil,
		[]byte(`{"groupName":"`+group+`"}`)))
	mustOK(t, "commit", call(t, n.BrokerAddr(), remoting.UpdateConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "1"}, nil))
	resp := mustOK(t, "317", call(t, n.BrokerAddr(), remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "false", "timeoutMillis": "5000"}, nil))
	l, err := adminbody.DecodeConsumeStatsList(resp.Body)
	if err != nil {
		t.Fatalf("317 body %s: %v", resp.Body, err)
	}
	var mine *adminbody.GroupConsumeStats
	for i := range l.ConsumeStatsList {
		if l.ConsumeStatsList[i].Group == group {
			mine = &l.ConsumeStatsList[i]
		}
	}
	if mine == nil || len(mine.Stats) != 1 || mine.Stats[0].Lag() != 3 || l.TotalDiff < 3 || l.BrokerAddr != n.Broker().Advertise() {
		t.Fatalf("317: %+v", l)
	}
	for mq, w := range mine.Stats[0].OffsetTable {
		if mq.QueueID == 0 && (w.ConsumerOffset != 1 || w.BrokerOffset != 3 || w.LastTimestamp == 0) {
			t.Fatalf("queue 0: %+v", w)
		}
	}
}
