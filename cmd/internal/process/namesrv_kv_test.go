package process_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
	"github.com/wheelmq/wheelmq/storage/meta"
)

const orderNS = namesrv.NamespaceOrderTopicConfig

// kvCall sends one KV request (fields as name, value pairs) to the name
// server.
func kvCall(t *testing.T, ns string, code int32, fields ...string) *remoting.Command {
	t.Helper()
	ext := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		ext[fields[i]] = fields[i+1]
	}
	return processtest.Invoke(t, ns, remoting.NewRequest(code, ext, nil))
}

// kvGet returns GET_KV_CONFIG's code and value header.
func kvGet(t *testing.T, ns, namespace, key string) (int32, string) {
	t.Helper()
	resp := kvCall(t, ns, remoting.GetKVConfig, "namespace", namespace, "key", key)
	return resp.Code, resp.Field("value")
}

// routeOf returns the topic's route from the name server (nil: none).
func routeOf(t *testing.T, ns, topic string) *namesrv.TopicRouteData {
	t.Helper()
	resp := processtest.Invoke(t, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if resp.Code != remoting.Success {
		return nil
	}
	rd, err := namesrv.ParseRouteData(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rd
}

// TestNamesrvKVConfig runs the KV requests against a real node over TCP:
// put, get, list and delete with RocketMQ's codes and remarks; the
// ORDER_TOPIC_CONFIG value in routes (orderMessageEnable) as the official Go
// producer reads it (it sends only to the queues the value names) and in
// the REGISTER_BROKER answer; kvConfig.json in <data>/namesrv surviving a
// restart of the node; and the requests DefaultMQAdminExt.deleteTopic
// sends (215 to the broker, 216 and 102 ORDER_TOPIC_CONFIG to the name
// server) all succeeding.
func TestNamesrvKVConfig(t *testing.T) {
	dir := t.TempDir()
	broker := pipeline.DefaultConfig().BrokerName
	opts := processtest.Options{Dir: dir, MutateNode: func(c *process.Config) { c.OrderMessageEnable = true }}
	n := processtest.Start(t, opts)
	ns := n.NamesrvAddr()
	topic := processtest.Unique("kv")
	processtest.CreateTopic(t, n, topic, 4)

	// Put, get, list.
	mustOK(t, "put app/greeting", kvCall(t, ns, remoting.PutKVConfig, "namespace", "app", "key", "greeting", "value", "hi <there>"))
	mustOK(t, "put app/empty", kvCall(t, ns, remoting.PutKVConfig, "namespace", "app", "key", "empty", "value", ""))
	if code, v := kvGet(t, ns, "app", "greeting"); code != remoting.Success || v != "hi <there>" {
		t.Fatalf("get app/greeting: %d %q", code, v)
	}
	resp := kvCall(t, ns, remoting.GetKVConfig, "namespace", "app", "key", "nope")
	if resp.Code != remoting.QueryNotFound || resp.Remark != "No config item, Namespace: app Key: nope" {
		t.Fatalf("get absent: %d %q", resp.Code, resp.Remark)
	}
	resp = mustOK(t, "list app", kvCall(t, ns, remoting.GetKVListByNamespace, "namespace", "app"))
	if string(resp.Body) != `{"table":{"empty":"","greeting":"hi <there>"}}` {
		t.Fatalf("list app: %s", resp.Body)
	}
	resp = kvCall(t, ns, remoting.GetKVListByNamespace, "namespace", "nope")
	if resp.Code != remoting.QueryNotFound || resp.Remark != "No config item, Namespace: nope" {
		t.Fatalf("list absent: %d %q", resp.Code, resp.Remark)
	}
	resp = kvCall(t, ns, remoting.PutKVConfig, "namespace", "app", "key", "k")
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "<value> is null") {
		t.Fatalf("put without value: %d %q", resp.Code, resp.Remark)
	}
	resp = kvCall(t, ns, remoting.PutKVConfig, "namespace", orderNS, "key", topic, "value", broker+":2;")
	if resp.Code != remoting.InvalidParameter {
		t.Fatalf("order conf the Go client would panic on: %d %q", resp.Code, resp.Remark)
	}

	// The order configuration reaches routes and the official producer.
	mustOK(t, "put order conf", kvCall(t, ns, remoting.PutKVConfig, "namespace", orderNS, "key", topic, "value", broker+":2"))
	if rd := routeOf(t, ns, topic); rd == nil || rd.OrderTopicConf != broker+":2" || len(rd.QueueDatas) != 1 {
		t.Fatalf("route: %+v", rd)
	}
	checkOrderedSends(t, ns, topic, 2)

	// A registration is answered with the ORDER_TOPIC_CONFIG namespace.
	reg, err := nsrvcodec.NewRegisterRequest(namesrv.BrokerInfo{Cluster: "DefaultCluster", BrokerName: "probe", BrokerAddr: "127.0.0.1:1"},
		map[string]meta.TopicConfig{}, namesrv.DataVersion{})
	if err != nil {
		t.Fatal(err)
	}
	resp = mustOK(t, "register probe", processtest.Invoke(t, ns, reg))
	if want := fmt.Sprintf(`{"table":{%q:%q}}`, topic, broker+":2"); string(resp.Body) != want {
		t.Fatalf("register answer body %s, want %s", resp.Body, want)
	}

	// The file, and a restart of the node on the same directory.
	path := filepath.Join(dir, "namesrv", namesrv.KVConfigFile)
	onDisk, err := namesrv.LoadKVConfig(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := onDisk.Get(orderNS, topic); v != broker+":2" || onDisk.Len() != 3 {
		t.Fatalf("%s holds %d items, %s = %q", path, onDisk.Len(), topic, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	n = processtest.Start(t, opts)
	ns = n.NamesrvAddr()
	if code, v := kvGet(t, ns, "app", "greeting"); code != remoting.Success || v != "hi <there>" {
		t.Fatalf("after restart, get app/greeting: %d %q", code, v)
	}
	if code, v := kvGet(t, ns, "app", "empty"); code != remoting.Success || v != "" {
		t.Fatalf("after restart, get app/empty: %d %q", code, v)
	}
	processtest.WaitRoute(t, ns, topic)
	if rd := routeOf(t, ns, topic); rd == nil || rd.OrderTopicConf != broker+":2" {
		t.Fatalf("after restart, route: %+v", rd)
	}

	// DefaultMQAdminExt.deleteTopic: 215 to every broker, 216 to every name
	// server, then 102 for the topic in ORDER_TOPIC_CONFIG.
	mustOK(t, "215", processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.DeleteTopicInBroker,
		map[string]string{"topic": topic}, nil)))
	mustOK(t, "216", processtest.Invoke(t, ns, remoting.NewRequest(remoting.DeleteTopicInNamesrv,
		map[string]string{"topic": topic}, nil)))
	mustOK(t, "102", kvCall(t, ns, remoting.DeleteKVConfig, "namespace", orderNS, "key", topic))
	// Deleting again (a second name server, a retry) succeeds too.
	mustOK(t, "102 again", kvCall(t, ns, remoting.DeleteKVConfig, "namespace", orderNS, "key", topic))
	if code, _ := kvGet(t, ns, orderNS, topic); code != remoting.QueryNotFound {
		t.Fatalf("order conf after deleteTopic: %d", code)
	}
	if rd := routeOf(t, ns, topic); rd != nil {
		t.Fatalf("route after deleteTopic: %+v", rd)
	}
	resp = mustOK(t, "list order conf", kvCall(t, ns, remoting.GetKVListByNamespace, "namespace", orderNS))
	if string(resp.Body) != `{"table":{}}` {
		t.Fatalf("ORDER_TOPIC_CONFIG after deleteTopic: %s", resp.Body)
	}
	if onDisk, err = namesrv.LoadKVConfig(nil, path); err != nil || onDisk.Len() != 2 {
		t.Fatalf("%s after deleteTopic: %d items, %v", path, onDisk.Len(), err)
	}
}

// checkOrderedSends sends with the official Go producer and checks every
// message went to the first queues queues of the topic, each of them used.
func checkOrderedSends(t *testing.T, ns, topic string, queues int) {
	t.Helper()
	p := processtest.Producer(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	used := map[int]int{}
	for i := range 12 {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", i))))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
		used[res.MessageQueue.QueueId]++
	}
	if len(used) != queues {
		t.Fatalf("sends went to queues %v, want each of 0..%d", used, queues-1)
	}
	for q := range used {
		if q >= queues {
			t.Fatalf("sends went to queues %v, want only 0..%d", used, queues-1)
		}
	}
}

// TestNamesrvKVConfigDir: a name server alone (wheelmq namesrv --data)
// keeps its KV configuration across restarts, refuses to start on a
// damaged kvConfig.json, naming it, and refuses a directory another name
// server holds.
func TestNamesrvKVConfigDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "namesrv")
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	cfg := process.Config{NamesrvListen: "127.0.0.1:0", NamesrvDir: dir, Logger: log}
	start := func() *process.Node {
		t.Helper()
		n, err := process.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Stop(context.Background()) })
		return n
	}
	n := start()
	mustOK(t, "put", kvCall(t, n.NamesrvAddr(), remoting.PutKVConfig, "namespace", "ns", "key", "k", "value", "v"))

	if other, err := process.Start(cfg); err == nil {
		_ = other.Stop(context.Background())
		t.Fatal("a second name server started on the same directory")
	} else if !strings.Contains(err.Error(), "in use by another name server") {
		t.Fatalf("second name server: %v", err)
	}

	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	n = start()
	if code, v := kvGet(t, n.NamesrvAddr(), "ns", "k"); code != remoting.Success || v != "v" {
		t.Fatalf("after restart: %d %q", code, v)
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, namesrv.KVConfigFile)
	if err := os.WriteFile(path, []byte(`{"configTable":{"ns":{"k":`), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := process.Start(cfg)
	if err == nil {
		_ = other.Stop(context.Background())
		t.Fatal("started on a damaged kvConfig.json")
	}
	if !strings.Contains(err.Error(), path) || !errors.Is(err, namesrv.ErrBadBody) {
		t.Fatalf("damaged file: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != `{"configTable":{"ns":{"k":` {
		t.Fatal("the damaged file was changed")
	}
	// The failed start released the directory: a repaired file starts.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	start()
}

// TestNamesrvConfig: GET_NAMESRV_CONFIG (319) shows the name server's
// settings as properties text; UPDATE_NAMESRV_CONFIG (318) is refused.
func TestNamesrvConfig(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	resp := mustOK(t, "319", call(t, n.NamesrvAddr(), remoting.GetNamesrvConfig, nil, nil))
	entries, err := javaprops.Parse(resp.Body)
	if err != nil {
		t.Fatalf("319 body %q: %v", resp.Body, err)
	}
	props := map[string]string{}
	for _, e := range entries {
		props[e.Key] = e.Value
	}
	_, port, _ := net.SplitHostPort(n.NamesrvAddr())
	if props["listenPort"] != port || props["orderMessageEnable"] != "false" || !strings.HasSuffix(props["kvConfigPath"], "kvConfig.json") {
		t.Fatalf("319: %v", props)
	}
	if resp := call(t, n.NamesrvAddr(), 318, nil, []byte("listenPort=1\n")); resp.Code != remoting.RequestCodeNotSupported {
		t.Fatalf("318: code %d %q", resp.Code, resp.Remark)
	}
}
