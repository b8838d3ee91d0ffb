package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// newAdmin starts the official Go admin client against the node's name
// server.
func newAdmin(t *testing.T, n *process.Node) admin.Admin {
	t.Helper()
	processtest.QuietClient()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{n.NamesrvAddr()})))
	if err != nil {
		t.Fatalf("new admin: %v", err)
	}
	t.Cleanup(func() { _ = adm.Close() })
	return adm
}

// call sends one request with the given fields and body to addr.
func call(t *testing.T, addr string, code int32, fields map[string]string, body []byte) *remoting.Command {
	t.Helper()
	return processtest.Invoke(t, addr, remoting.NewRequest(code, fields, body))
}

// mustOK fails the test unless resp is SUCCESS.
func mustOK(t *testing.T, what string, resp *remoting.Command) *remoting.Command {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("%s: code %d %q", what, resp.Code, resp.Remark)
	}
	return resp
}

// eventually retries check until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAdminTopicsAndGroups drives topics and subscription groups with the
// official Go admin API, and the group requests it lacks (200, 207) with
// the Go admin's own SubscriptionGroupConfig encoded as it would send it.
func TestAdminTopicsAndGroups(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	adm := newAdmin(t, n)
	ctx := context.Background()
	topic := processtest.Unique("admtopic")

	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(n.BrokerAddr()),
		admin.WithReadQueueNums(3), admin.WithWriteQueueNums(3)); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil || !slices.Contains(list.TopicList, topic) {
		t.Fatalf("topic list %v (%v) lacks %s", list, err, topic)
	}
	mqs, err := adm.FetchPublishMessageQueues(ctx, topic)
	if err != nil || len(mqs) != 3 {
		t.Fatalf("publish queues %v (%v), want 3", mqs, err)
	}

	// The name server's cluster table (GET_BROKER_CLUSTER_INFO, mqadmin clusterList).
	var ci struct {
		BrokerAddrTable map[string]struct {
			BrokerAddrs map[string]string `json:"brokerAddrs"`
			Cluster     string            `json:"cluster"`
		} `json:"brokerAddrTable"`
		ClusterAddrTable map[string][]string `json:"clusterAddrTable"`
	}
	resp := mustOK(t, "cluster info", call(t, n.NamesrvAddr(), remoting.GetBrokerClusterInfo, nil, nil))
	if err := json.Unmarshal(resp.Body, &ci); err != nil {
		t.Fatalf("cluster info body %s: %v", resp.Body, err)
	}
	if b := ci.BrokerAddrTable["broker-a"]; b.BrokerAddrs["0"] != n.Broker().Advertise() || b.Cluster != "DefaultCluster" ||
		!slices.Contains(ci.ClusterAddrTable["DefaultCluster"], "broker-a") {
		t.Fatalf("cluster info %s", resp.Body)
	}

	// A group created with the Go admin's own struct, as encoding/json writes it.
	group := processtest.Unique("admgroup")
	cfg := admin.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeFromMinEnable: true,
		RetryMaxTimes: 3, RetryQueueNums: 2, WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}
	body, _ := json.Marshal(cfg)
	mustOK(t, "create group", call(t, n.BrokerAddr(), remoting.UpdateAndCreateSubscriptionGroup, nil, body))
	if resp := call(t, n.BrokerAddr(), remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"bad name"}`)); resp.Code != remoting.InvalidParameter {
		t.Errorf("invalid group name: code %d %q", resp.Code, resp.Remark)
	}
	all, err := adm.GetAllSubscriptionGroup(ctx, n.BrokerAddr(), 3*time.Second)
	if err != nil {
		t.Fatalf("get all groups: %v", err)
	}
	got, ok := all.SubscriptionGroupTable[group]
	if !ok || got != cfg {
		t.Fatalf("group as the Go admin reads it: %+v (present %v), want %+v", got, ok, cfg)
	}
	if _, ok := all.SubscriptionGroupTable["TOOLS_CONSUMER"]; !ok || all.DataVersion.Counter < 1 || all.DataVersion.Timestamp <= 0 {
		t.Errorf("built-in groups or data version missing: %+v", all.DataVersion)
	}

	mustOK(t, "delete group", call(t, n.BrokerAddr(), remoting.DeleteSubscriptionGroup, map[string]string{"groupName": group}, nil))
	all, err = adm.GetAllSubscriptionGroup(ctx, n.BrokerAddr(), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all.SubscriptionGroupTable[group]; ok {
		t.Fatal("group still listed after DELETE_SUBSCRIPTIONGROUP")
	}

	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(n.BrokerAddr()),
		admin.WithNameSrvAddr([]string{n.NamesrvAddr()})); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	eventually(t, "topic gone from the name server", 10*time.Second, func() error {
		if r := call(t, n.NamesrvAddr(), remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil); r.Code != remoting.TopicNotExist {
			return fmt.Errorf("route still served: code %d", r.Code)
		}
		return nil
	})
	var cfgs struct {
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
	}
	resp = mustOK(t, "all topic config", call(t, n.BrokerAddr(), remoting.GetAllTopicConfig, nil, nil))
	if err := json.Unmarshal(resp.Body, &cfgs); err != nil || cfgs.TopicConfigTable[topic] != nil ||
		resp.Field("totalTopicNum") != strconv.Itoa(len(cfgs.TopicConfigTable)) {
		t.Fatalf("topic config after delete: %v %s", err, resp.Body)
	}
	if r := call(t, n.BrokerAddr(), remoting.GetTopicConfig, map[string]string{"topic": topic}, nil); r.Code != remoting.TopicNotExist {
		t.Errorf("GET_TOPIC_CONFIG of a deleted topic: code %d", r.Code)
	}
}

// TestAdminStatsAndConnections produces N messages, consumes them, stops
// the consumer and produces M more: consume stats report a lag of M;
// connections, topic stats, the earliest store time, the broker runtime
// info and the consumer's running info are checked on the way.
func TestAdminStatsAndConnections(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("stats"), processtest.Unique("cg")
	processtest.CreateTopic(t, n, topic, 2)
	pgroup := processtest.Unique("pg")
	p := processtest.Producer(t, n.NamesrvAddr(), producer.WithGroupName(pgroup))
	ctx := context.Background()
	start := time.Now().UnixMilli()
	const first, later = 20, 7
	for i := range first {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", i)))); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	c, rec := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	if !rec.WaitFor(first, 30*time.Second) {
		t.Fatalf("consumed %d of %d", rec.Len(), first)
	}

	// Connections while both clients are online.
	resp := mustOK(t, "consumer connections", call(t, n.BrokerAddr(), remoting.GetConsumerConnectionList,
		map[string]string{"consumerGroup": group}, nil))
	cc, err := adminbody.DecodeConsumerConnection(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].Language != "GO" || cc.ConnectionSet[0].Version <= 0 ||
		!strings.Contains(cc.ConnectionSet[0].ClientID, "@") || cc.ConnectionSet[0].ClientAddr == "" ||
		cc.MessageModel != "CLUSTERING" || cc.ConsumeType != "CONSUME_PASSIVELY" || cc.SubscriptionTable[topic].SubString != "*" {
		t.Fatalf("consumer connection %s", resp.Body)
	}
	clientID := cc.ConnectionSet[0].ClientID
	// The producer's first heartbeat comes a second after its start.
	eventually(t, "producer connections", 10*time.Second, func() error {
		resp := call(t, n.BrokerAddr(), remoting.GetProducerConnectionList, map[string]string{"producerGroup": pgroup}, nil)
		if resp.Code != remoting.Success {
			return fmt.Errorf("code %d %q", resp.Code, resp.Remark)
		}
		pc, err := adminbody.DecodeProducerConnection(resp.Body)
		if err != nil || len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].Language != "GO" {
			t.Fatalf("producer connection %s (%v)", resp.Body, err)
		}
		return nil
	})
	for _, bad := range []struct {
		code   int32
		fields map[string]string
		want   int32
	}{
		{remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "nobody"}, remoting.ConsumerNotOnline},
		{remoting.GetProducerConnectionList, map[string]string{"producerGroup": "nobody"}, remoting.SystemError},
		{remoting.GetConsumerConnectionList, nil, remoting.InvalidParameter},
	} {
		if r := call(t, n.BrokerAddr(), bad.code, bad.fields, nil); r.Code != bad.want {
			t.Errorf("request %d %v: code %d %q, want %d", bad.code, bad.fields, r.Code, r.Remark, bad.want)
		}
	}

	// The consumer's running info, relayed to the Go client and back.
	resp = mustOK(t, "consumer running info", call(t, n.BrokerAddr(), remoting.GetConsumerRunningInfo,
		map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": "false"}, nil))
	if !strings.Contains(string(resp.Body), `"properties"`) || !strings.Contains(string(resp.Body), topic) {
		t.Fatalf("running info body %s", resp.Body)
	}

	// Consume stats: everything consumed, lag 0.
	stats := func() adminbody.ConsumeStats {
		resp := mustOK(t, "consume stats", call(t, n.BrokerAddr(), remoting.GetConsumeStats,
			map[string]string{"consumerGroup": group, "topic": topic}, nil))
		cs, err := adminbody.DecodeConsumeStats(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	eventually(t, "consumed offsets committed", 20*time.Second, func() error {
		cs := stats()
		if len(cs.OffsetTable) != 2 || cs.Lag() != 0 || cs.ConsumeTps <= 0 {
			return fmt.Errorf("%d queues, lag %d, tps %v", len(cs.OffsetTable), cs.Lag(), cs.ConsumeTps)
		}
		return nil
	})
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for i := range later {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("late%d", i)))); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	eventually(t, "lag of the later messages", 10*time.Second, func() error {
		cs := stats()
		var broker, consumed int64
		for mq, w := range cs.OffsetTable {
			broker += w.BrokerOffset
			consumed += w.ConsumerOffset
			if mq.Topic != topic || mq.BrokerName != "broker-a" || w.PullOffset < w.ConsumerOffset ||
				w.ConsumerOffset > 0 && (w.LastTimestamp < start || w.LastTimestamp > time.Now().UnixMilli()) {
				return fmt.Errorf("queue %+v: %+v", mq, w)
			}
		}
		if broker != first+later || consumed != first || cs.Lag() != later {
			return fmt.Errorf("broker %d consumed %d lag %d", broker, consumed, cs.Lag())
		}
		return nil
	})

	// Topic stats and the earliest store time.
	resp = mustOK(t, "topic stats", call(t, n.BrokerAddr(), remoting.GetTopicStatsInfo, map[string]string{"topic": topic}, nil))
	ts, err := adminbody.DecodeTopicStatsTable(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, o := range ts.OffsetTable {
		total += o.MaxOffset - o.MinOffset
		if o.MaxOffset > 0 && (o.LastUpdateTimestamp < start || o.LastUpdateTimestamp > time.Now().UnixMilli()) {
			t.Errorf("topic stats queue %+v", o)
		}
	}
	if len(ts.OffsetTable) != 2 || total != first+later || ts.TopicPutTps < 0 {
		t.Fatalf("topic stats %s", resp.Body)
	}
	if r := call(t, n.BrokerAddr(), remoting.GetTopicStatsInfo, map[string]string{"topic": "nope"}, nil); r.Code != remoting.TopicNotExist {
		t.Errorf("topic stats of an unknown topic: code %d", r.Code)
	}
	resp = mustOK(t, "earliest store time", call(t, n.BrokerAddr(), remoting.GetEarliestMsgStoretime,
		map[string]string{"topic": topic, "queueId": "0"}, nil))
	if ts, _ := strconv.ParseInt(resp.Field("timestamp"), 10, 64); ts < start || ts > time.Now().UnixMilli() {
		t.Errorf("earliest store time %q, want within the test", resp.Field("timestamp"))
	}
	checkRuntimeInfo(t, n, start, first+later)
}

// checkRuntimeInfo checks the keys mqadmin's clusterList and brokerStatus
// read, with sane values.
func checkRuntimeInfo(t *testing.T, n *process.Node, start int64, stored int) {
	t.Helper()
	resp := mustOK(t, "runtime info", call(t, n.BrokerAddr(), remoting.GetBrokerRuntimeInfo, nil, nil))
	kv, err := adminbody.DecodeKVTable(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	tab := kv.Table
	num := func(k string) float64 {
		t.Helper()
		f, err := strconv.ParseFloat(strings.Fields(tab[k] + " x")[0], 64)
		if err != nil {
			t.Errorf("runtime info %s = %q: not a number", k, tab[k])
		}
		return f
	}
	now := float64(time.Now().UnixMilli())
	if tab["brokerVersionDesc"] != "V5_3_3" || tab["brokerActive"] != "true" || !strings.HasPrefix(tab["runtime"], "[ 0 days") {
		t.Errorf("identity keys: %v", tab)
	}
	if b := num("bootTimestamp"); b > float64(start) || b < float64(start)-60_000 {
		t.Errorf("bootTimestamp %v, test started at %d", b, start)
	}
	if e := num("earliestMessageTimeStamp"); e < float64(start) || e > now {
		t.Errorf("earliestMessageTimeStamp %v", e)
	}
	if num("msgPutTotalTodayNow") < float64(stored) || num("msgGetTotalTodayNow") < 1 ||
		num("putMessageTimesTotal") < float64(stored) || num("putMessageSizeTotal") <= 0 {
		t.Errorf("totals: put %s get %s", tab["msgPutTotalTodayNow"], tab["msgGetTotalTodayNow"])
	}
	if num("commitLogMaxOffset") <= num("commitLogMinOffset") || num("dispatchBehindBytes") < 0 {
		t.Errorf("commitlog offsets %s..%s", tab["commitLogMinOffset"], tab["commitLogMaxOffset"])
	}
	if r := num("commitLogDiskRatio"); r <= 0 || r >= 1 {
		t.Errorf("commitLogDiskRatio %v", r)
	}
	for _, k := range []string{"putTps", "getTransferredTps", "getFoundTps", "getTotalTps"} {
		if f := strings.Fields(tab[k]); len(f) != 3 {
			t.Errorf("%s = %q, want three rates", k, tab[k])
		}
		if num(k) < 0 {
			t.Errorf("%s negative", k)
		}
	}
	for _, k := range []string{"timerReadBehind", "timerOffsetBehind", "timerCongestNum", "timerEnqueueTps", "timerDequeueTps",
		"sendThreadPoolQueueSize", "pullThreadPoolQueueSize", "sendThreadPoolQueueHeadWaitTimeMills", "pageCacheLockTimeMills",
		"msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning"} {
		if num(k) < 0 {
			t.Errorf("%s negative", k)
		}
	}
	if !strings.HasPrefix(tab["commitLogDirCapacity"], "Total : ") {
		t.Errorf("commitLogDirCapacity %q", tab["commitLogDirCapacity"])
	}
}
