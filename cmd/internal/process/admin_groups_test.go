package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// putGroup creates or replaces a subscription group with
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
func putGroup(t *testing.T, n *process.Node, cfg meta.SubscriptionGroupConfig) {
	t.Helper()
	body, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, "create group "+cfg.GroupName, call(t, n.BrokerAddr(), remoting.UpdateAndCreateSubscriptionGroup, nil, body))
}

// allGroups reads GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
func allGroups(t *testing.T, n *process.Node) map[string]meta.SubscriptionGroupConfig {
	t.Helper()
	var w struct {
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	resp := mustOK(t, "all groups", call(t, n.BrokerAddr(), remoting.GetAllSubscriptionGroupConfig, nil, nil))
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	out := map[string]meta.SubscriptionGroupConfig{}
	for name, raw := range w.SubscriptionGroupTable {
		c, err := meta.DecodeSubscriptionGroupConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = c
	}
	return out
}

// rawPull sends one PULL_MESSAGE without suspension.
func rawPull(t *testing.T, n *process.Node, group, topic string, queue int32, offset int64) *remoting.Command {
	t.Helper()
	return call(t, n.BrokerAddr(), remoting.PullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(queue)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0",
		"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
	}, nil)
}

// TestSubscriptionGroupsSurviveRestart creates a group by request and one
// by a consumer's heartbeat, restarts the broker with auto-creation off,
// and checks that both are still there and acted on: a group with
// consumeEnable off cannot pull, an unknown group cannot pull or register.
func TestSubscriptionGroupsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	topic := processtest.Unique("grp")
	frozen, auto := processtest.Unique("frozen"), processtest.Unique("auto")
	n1 := processtest.Start(t, processtest.Options{Dir: dir})
	processtest.CreateTopic(t, n1, topic, 1)
	cfg := meta.NewSubscriptionGroupConfig(frozen)
	cfg.ConsumeEnable, cfg.RetryMaxTimes, cfg.RetryQueueNums = false, 3, 2
	putGroup(t, n1, cfg)
	if r := rawPull(t, n1, frozen, topic, 0, 0); r.Code != remoting.NoPermission ||
		r.Remark != "subscription group no permission, "+frozen {
		t.Fatalf("pull of a disabled group: code %d %q", r.Code, r.Remark)
	}
	c, _ := processtest.PushConsumer(t, n1.NamesrvAddr(), auto, topic, "*")
	if g, ok := allGroups(t, n1)[auto]; !ok || !reflect.DeepEqual(g, meta.NewSubscriptionGroupConfig(auto)) {
		t.Fatalf("group %s not auto-created at heartbeat: %+v", auto, g)
	}
	_ = c.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	onDisk, _, err := meta.LoadSubscriptionGroups(nil, filepath.Join(dir, "config", "subscriptionGroup.json"))
	if err != nil || onDisk[frozen].RetryMaxTimes != 3 || onDisk[auto].GroupName != auto {
		t.Fatalf("subscriptionGroup.json: %v %+v", err, onDisk)
	}

	n2 := processtest.Start(t, processtest.Options{Dir: dir, Mutate: func(c *pipeline.Config) { c.AutoCreateGroup = false }})
	groups := allGroups(t, n2)
	if g := groups[frozen]; g.ConsumeEnable || g.RetryMaxTimes != 3 || g.RetryQueueNums != 2 {
		t.Fatalf("after restart %s = %+v", frozen, g)
	}
	if _, ok := groups[auto]; !ok {
		t.Fatalf("after restart %s is gone", auto)
	}
	if r := rawPull(t, n2, frozen, topic, 0, 0); r.Code != remoting.NoPermission {
		t.Errorf("pull of the disabled group after restart: code %d %q", r.Code, r.Remark)
	}
	if r := rawPull(t, n2, auto, topic, 0, 0); r.Code != remoting.PullNotFound {
		t.Errorf("pull of a known group: code %d %q", r.Code, r.Remark)
	}
	ghost := processtest.Unique("ghost")
	if r := rawPull(t, n2, ghost, topic, 0, 0); r.Code != remoting.SubscriptionGroupNotExist {
		t.Errorf("pull of an unknown group without auto-creation: code %d %q", r.Code, r.Remark)
	}
	hb := fmt.Sprintf(`{"clientID":"10.9.9.9@1","producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",`+
		`"subscriptionDataSet":[{"topic":%q,"subString":"*","tagsSet":[],"codeSet":[],"subVersion":1}],"unitMode":false}]}`,
		ghost, topic)
	mustOK(t, "heartbeat of an unknown group", call(t, n2.BrokerAddr(), remoting.HeartBeat, nil, []byte(hb)))
	if r := call(t, n2.BrokerAddr(), remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": ghost}, nil); r.Code == remoting.Success {
		t.Errorf("a consumer of an unknown group was registered: %s", r.Body)
	}
	if _, ok := allGroups(t, n2)[ghost]; ok {
		t.Error("a group was created although auto-creation is off")
	}
}

// TestSendBackHonoursGroupRetryPolicy gives messages back without
// maxReconsumeTimes (as clients other than Go and Java may): the group's
// retryMaxTimes sends them to the DLQ, retryQueueNums 0 drops them, and
// the %RETRY% topic gets the group's retryQueueNums queues.
func TestSendBackHonoursGroupRetryPolicy(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("sb")
	processtest.CreateTopic(t, n, topic, 1)
	dlqFast, noRetry := processtest.Unique("dlqfast"), processtest.Unique("noretry")
	g := meta.NewSubscriptionGroupConfig(dlqFast)
	g.RetryMaxTimes, g.RetryQueueNums = 0, 2
	putGroup(t, n, g)
	g = meta.NewSubscriptionGroupConfig(noRetry)
	g.RetryQueueNums = 0
	putGroup(t, n, g)
	p := processtest.Producer(t, n.NamesrvAddr())
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("give me back")))
	if err != nil {
		t.Fatal(err)
	}
	_, off, err := message.ParseOffsetMsgID(res.OffsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	sendBack := func(group string, extra map[string]string) {
		t.Helper()
		f := map[string]string{"group": group, "offset": strconv.FormatInt(off, 10), "delayLevel": "0",
			"originMsgId": res.MsgID, "originTopic": topic, "unitMode": "false"}
		for k, v := range extra {
			f[k] = v
		}
		mustOK(t, "send back to "+group, call(t, n.BrokerAddr(), remoting.ConsumerSendMsgBack, f, nil))
	}
	maxOffset := func(topic string) int64 {
		r := mustOK(t, "max offset", call(t, n.BrokerAddr(), remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil))
		v, _ := strconv.ParseInt(r.Field("offset"), 10, 64)
		return v
	}
	sendBack(noRetry, nil)
	sendBack(dlqFast, nil)
	eventually(t, "message in the DLQ after retryMaxTimes 0", 10*time.Second, func() error {
		if got := maxOffset(meta.DLQTopic(dlqFast)); got != 1 {
			return fmt.Errorf("%%DLQ%% holds %d", got)
		}
		return nil
	})
	sendBack(dlqFast, map[string]string{"maxReconsumeTimes": "16"}) // the request's limit wins: a retry
	eventually(t, "%RETRY% topic with retryQueueNums queues", 10*time.Second, func() error {
		r := call(t, n.BrokerAddr(), remoting.GetTopicConfig, map[string]string{"topic": meta.RetryTopic(dlqFast)}, nil)
		if r.Code != remoting.Success || !strings.Contains(string(r.Body), `"writeQueueNums":2`) {
			return fmt.Errorf("code %d %s", r.Code, r.Body)
		}
		return nil
	})
	if got := maxOffset(meta.DLQTopic(dlqFast)); got != 1 {
		t.Errorf("%%DLQ%% holds %d after a retry within the request's limit", got)
	}
	for _, tp := range []string{meta.RetryTopic(noRetry), meta.DLQTopic(noRetry)} {
		if got := maxOffset(tp); got != 0 {
			t.Errorf("%s holds %d messages although retryQueueNums is 0", tp, got)
		}
	}
}

// TestResetConsumerOffset resets a group to the start of a topic with
// INVOKE_BROKER_TO_RESET_OFFSET, as mqadmin resetOffsetByTime does.
func TestResetConsumerOffset(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("reset"), processtest.Unique("cg")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	for i := range 10 {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
	putGroup(t, n, meta.NewSubscriptionGroupConfig(group))
	var ends [2]int64
	eventually(t, "every message in its consume queue", 10*time.Second, func() error {
		for q := range int32(2) {
			r := mustOK(t, "max offset", call(t, n.BrokerAddr(), remoting.GetMaxOffset,
				map[string]string{"topic": topic, "queueId": strconv.Itoa(int(q))}, nil))
			ends[q], _ = strconv.ParseInt(r.Field("offset"), 10, 64)
		}
		if ends[0]+ends[1] != 10 {
			return fmt.Errorf("queue ends %v", ends)
		}
		return nil
	})
	for q := range int32(2) {
		mustOK(t, "commit", call(t, n.BrokerAddr(), remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group,
			"topic": topic, "queueId": strconv.Itoa(int(q)), "commitOffset": strconv.FormatInt(ends[q], 10)}, nil))
	}
	queryOffset := func(q int) int64 {
		r := mustOK(t, "query offset", call(t, n.BrokerAddr(), remoting.QueryConsumerOffset,
			map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil))
		v, _ := strconv.ParseInt(r.Field("offset"), 10, 64)
		return v
	}
	eventually(t, "commits applied", 5*time.Second, func() error {
		if queryOffset(0) != ends[0] || queryOffset(1) != ends[1] {
			return fmt.Errorf("offsets %d %d", queryOffset(0), queryOffset(1))
		}
		return nil
	})

	for _, bad := range []struct {
		fields map[string]string
		code   int32
	}{
		{map[string]string{"topic": "nope", "group": group, "timestamp": "0", "isForce": "true"}, remoting.TopicNotExist},
		{map[string]string{"topic": topic, "group": "nobody", "timestamp": "0", "isForce": "true"}, remoting.SubscriptionGroupNotExist},
		{map[string]string{"topic": topic, "group": group, "timestamp": "0", "queueId": "0", "offset": "999"}, remoting.SystemError},
		{map[string]string{"topic": topic, "group": group}, remoting.InvalidParameter},
	} {
		if r := call(t, n.BrokerAddr(), remoting.InvokeBrokerToResetOffset, bad.fields, nil); r.Code != bad.code {
			t.Errorf("reset %v: code %d %q, want %d", bad.fields, r.Code, r.Remark, bad.code)
		}
	}
	resp := mustOK(t, "reset", call(t, n.BrokerAddr(), remoting.InvokeBrokerToResetOffset,
		map[string]string{"topic": topic, "group": group, "timestamp": "0", "isForce": "true"}, nil))
	body, err := adminbody.DecodeResetOffsetBody(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := map[adminbody.MessageQueue]int64{{BrokerName: "broker-a", QueueID: 0, Topic: topic}: 0,
		{BrokerName: "broker-a", QueueID: 1, Topic: topic}: 0}
	if fmt.Sprint(body.OffsetTable) != fmt.Sprint(want) {
		t.Fatalf("reset answer %s", resp.Body)
	}
	if queryOffset(0) != 0 || queryOffset(1) != 0 {
		t.Fatalf("offsets after reset %d %d", queryOffset(0), queryOffset(1))
	}
	// The consumer's periodic commit of its old position does not undo it.
	mustOK(t, "stale commit", call(t, n.BrokerAddr(), remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group,
		"topic": topic, "queueId": "0", "commitOffset": strconv.FormatInt(ends[0], 10)}, nil))
	if got := queryOffset(0); got != 0 {
		t.Fatalf("stale commit applied: offset %d", got)
	}
	// The next pull of each queue is moved to the reset offset, once.
	for q := range int32(2) {
		r := rawPull(t, n, group, topic, q, ends[q])
		if r.Code != remoting.PullOffsetMoved || r.Field("nextBeginOffset") != "0" {
			t.Fatalf("queue %d: first pull after reset: code %d next %q", q, r.Code, r.Field("nextBeginOffset"))
		}
		if r := rawPull(t, n, group, topic, q, 0); r.Code != remoting.Success {
			t.Fatalf("queue %d: pull from the reset offset: code %d %q", q, r.Code, r.Remark)
		}
	}
}
