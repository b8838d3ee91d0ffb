package process_test

// Access control end to end (docs/operations.md, "Access control"): a node
// with an ACL file, driven by the official Go client with credentials and
// by raw frames; every refusal is 16 NO_PERMISSION and changes nothing,
// which each test checks in the broker's state (the Go admin client
// ignores response codes).

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// The accounts of the tests' ACL file.
var (
	aclAdmin = auth.Credentials{AccessKey: "admin-ops", SecretKey: "admin-ops-secret"}
	aclAlice = auth.Credentials{AccessKey: "alice-app", SecretKey: "alice-app-secret"}     // PUB|SUB on orders, SUB on g_alice
	aclBob   = auth.Credentials{AccessKey: "bob-reader", SecretKey: "bob-reader-secret"}   // SUB on orders and g_bob
	aclCarol = auth.Credentials{AccessKey: "carol-app", SecretKey: "carol-app-secret"}     // SUB on g_carol only
	aclDave  = auth.Credentials{AccessKey: "dave-remote", SecretKey: "dave-remote-secret"} // everything, from 10.9.*.* only
)

// aclFile is the tests' plain_acl.yml; bobTopics is bob's topicPerms.
func aclFile(bobTopics string) string {
	return `accounts:
  - accessKey: admin-ops
    secretKey: admin-ops-secret
    admin: true
  - accessKey: alice-app
    secretKey: alice-app-secret
    topicPerms: [orders=PUB|SUB]
    groupPerms: [g_alice=SUB]
  - accessKey: bob-reader
    secretKey: bob-reader-secret
    topicPerms: [` + bobTopics + `]
    groupPerms: [g_bob=SUB]
  - accessKey: carol-app
    secretKey: carol-app-secret
    groupPerms: [g_carol=SUB]
  - accessKey: dave-remote
    secretKey: dave-remote-secret
    whiteRemoteAddress: 10.9.*.*
    defaultTopicPerm: PUB|SUB
`
}

// startACLNode starts a node (broker and embedded name server) with the
// ACL file content, reloaded every 100 ms; it returns the file's path.
func startACLNode(t *testing.T, content string) (*process.Node, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	n := processtest.Start(t, processtest.Options{Admin: aclAdmin, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
	}})
	return n, path
}

// signedInvoke sends req signed by creds (empty: unsigned).
func signedInvoke(t *testing.T, addr string, req *remoting.Command, creds auth.Credentials) *remoting.Command {
	t.Helper()
	return processtest.InvokeSigned(t, addr, req, creds)
}

// createTopicAs creates topic with queues queues as creds, waiting for its
// route when that succeeded.
func createTopicAs(t *testing.T, n *process.Node, creds auth.Credentials, topic string, queues int) *remoting.Command {
	t.Helper()
	q := strconv.Itoa(queues)
	resp := signedInvoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil), creds)
	if resp.Code == remoting.Success {
		waitFor(t, 15*time.Second, "route of "+topic, func() bool {
			r := signedInvoke(t, n.NamesrvAddr(), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil), aclAdmin)
			return r.Code == remoting.Success
		})
	}
	return resp
}

// storedIn is the number of messages in topic's queues.
func storedIn(n *process.Node, topic string, queues int32) int64 {
	var total int64
	for q := range queues {
		if cq := n.Broker().Store().Queues.Lookup(topic, q); cq != nil {
			total += cq.MaxOffset()
		}
	}
	return total
}

func hasTopic(n *process.Node, topic string) bool {
	_, ok := n.Broker().Pipeline().Topics().Get(topic)
	return ok
}

func goCreds(c auth.Credentials) primitive.Credentials {
	return primitive.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}
}

// The official Go client: a right key sends and consumes; a wrong secret,
// no key and a key without PUB are refused (16) and store nothing; the
// admin client of a non-admin account creates nothing, an admin's does.
func TestACLGoClient(t *testing.T) {
	n, _ := startACLNode(t, aclFile("orders=SUB"))
	ns := n.NamesrvAddr()
	if r := createTopicAs(t, n, aclAdmin, "orders", 2); r.Code != remoting.Success {
		t.Fatalf("admin create topic: %d %s", r.Code, r.Remark)
	}
	ctx := context.Background()
	alice := processtest.Producer(t, ns, producer.WithCredentials(goCreds(aclAlice)))
	for i := range 3 {
		if _, err := alice.SendSync(ctx, primitive.NewMessage("orders", []byte("m"+strconv.Itoa(i)))); err != nil {
			t.Fatalf("alice send: %v", err)
		}
	}
	for _, c := range []struct {
		name  string
		opts  []producer.Option
		error string
	}{
		// Refused at the name server already: no route (its 16 is logged by the client).
		{"wrong secret", []producer.Option{producer.WithCredentials(primitive.Credentials{AccessKey: "alice-app", SecretKey: "guess"})},
			"route info not found"},
		{"no key", nil, "route info not found"},
		{"no PUB", []producer.Option{producer.WithCredentials(goCreds(aclBob))}, "no PUB on topic orders (rule topicPerms orders=SUB)"},
	} {
		p := processtest.Producer(t, ns, append(c.opts, producer.WithRetry(0))...)
		_, err := p.SendSync(ctx, primitive.NewMessage("orders", []byte("refused")))
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: send error %v, want one with %q", c.name, err, c.error)
		}
	}
	waitFor(t, 5*time.Second, "alice's messages to be dispatched", func() bool { return storedIn(n, "orders", 2) >= 3 })
	if got := storedIn(n, "orders", 2); got != 3 {
		t.Fatalf("orders holds %d messages, want alice's 3", got)
	}
	_, rec := processtest.PushConsumer(t, ns, "g_alice", "orders", "*", withConsumerCreds(aclAlice)...)
	if !rec.WaitFor(3, 20*time.Second) {
		t.Fatalf("alice's consumer got %d of 3 messages", rec.Len())
	}

	brokers := []string{n.BrokerAddr()}
	for _, c := range []struct {
		creds auth.Credentials
		topic string
		want  bool
	}{{aclAlice, "evil_topic", false}, {aclAdmin, "admin_topic", true}} {
		adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})), admin.WithCredentials(goCreds(c.creds)))
		if err != nil {
			t.Fatal(err)
		}
		// The Go admin client signs only after GetAllSubscriptionGroup ran.
		_, _ = adm.GetAllSubscriptionGroup(ctx, brokers[0], 3*time.Second)
		_ = adm.CreateTopic(ctx, admin.WithTopicCreate(c.topic), admin.WithBrokerAddrCreate(brokers[0]))
		_ = adm.Close()
		if hasTopic(n, c.topic) != c.want {
			t.Errorf("%s created %s: %v, want %v", c.creds.AccessKey, c.topic, hasTopic(n, c.topic), c.want)
		}
	}
}

// Raw requests to both ports: each refusal is 16 with a remark naming
// the account, the resource and the rule, and changes nothing.
func TestACLRefusals(t *testing.T) {
	n, _ := startACLNode(t, aclFile("orders=SUB"))
	b, ns := n.BrokerAddr(), n.NamesrvAddr()
	createTopicAs(t, n, aclAdmin, "orders", 1)
	send := func(body string) *remoting.Command { return processtest.SendRequest("orders", 0, []byte(body), nil) }
	tampered := send("original")
	aclAlice.Sign(tampered)
	tampered.Body = []byte("modified")
	brokerInfo := func() string {
		return string(signedInvoke(t, ns, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), aclAdmin).Body)
	}
	infoBefore := brokerInfo()
	fake := remoting.NewRequest(remoting.RegisterBroker, map[string]string{"brokerName": "fake", "brokerAddr": "10.6.6.6:10911",
		"clusterName": "DefaultCluster", "haServerAddr": "10.6.6.6:10912", "brokerId": "0", "compressed": "false"},
		[]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{},"dataVersion":{"counter":1,"timestamp":1}},"filterServerList":[]}`))
	long := auth.Credentials{AccessKey: strings.Repeat("k", 300), SecretKey: "x"}
	cases := []struct {
		name   string
		addr   string
		req    *remoting.Command
		creds  auth.Credentials
		code   int32
		remark string
	}{
		{"right key", b, send("ok"), aclAlice, remoting.Success, ""},
		{"wrong secret", b, send("x"), auth.Credentials{AccessKey: "alice-app", SecretKey: "nope-nope"}, remoting.NoPermission,
			"[ACL] accessKey alice-app: unknown, or the signature does not match its secret"},
		{"no key", b, send("x"), auth.Credentials{}, remoting.NoPermission, "[ACL] anonymous request refused: sign it with an AccessKey"},
		{"unknown key", b, send("x"), auth.Credentials{AccessKey: "mallory-x", SecretKey: "whatever"}, remoting.NoPermission, "mallory-x: unknown"},
		{"huge key", b, send("x"), long, remoting.NoPermission, "accessKey of 300 bytes refused"},
		{"address", b, send("x"), aclDave, remoting.NoPermission,
			"[ACL] accessKey dave-remote may not be used from 127.0.0.1 (rule whiteRemoteAddress 10.9.*.*)"},
		{"no PUB", b, send("x"), aclBob, remoting.NoPermission, "[ACL] accessKey bob-reader: no PUB on topic orders (rule topicPerms orders=SUB)"},
		{"modified body", b, tampered, auth.Credentials{}, remoting.NoPermission, "does not match"},
		{"batch without PUB", b, remoting.NewRequest(remoting.SendBatchMessage, map[string]string{"a": "pg", "b": "orders", "c": "TBW102",
			"d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": "", "m": "true"}, []byte("x")), aclBob, remoting.NoPermission, "no PUB on topic orders"},
		{"pull without group SUB", b, processtest.PullRequest("g_other", "orders", 0, 0, 32), aclBob, remoting.NoPermission,
			"no SUB on group g_other (rule defaultGroupPerm (absent: DENY))"},
		{"create topic, not admin", b, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": "evil", "readQueueNums": "1",
			"writeQueueNums": "1", "perm": "6"}, nil), aclAlice, remoting.NoPermission, "[ACL] accessKey alice-app: request code 17 needs an admin account"},
		{"broker config, not admin", b, remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte("maxMessageSize=1\n")), aclAlice,
			remoting.NoPermission, "request code 25 needs an admin account"},
		{"broker config dump, not admin", b, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), aclAlice, remoting.NoPermission, "code 26"},
		{"unknown code, not admin", b, remoting.NewRequest(9999, nil, nil), aclAlice, remoting.NoPermission, "code 9999 needs an admin"},
		{"unknown code, admin", b, remoting.NewRequest(9999, nil, nil), aclAdmin, remoting.RequestCodeNotSupported, ""},
		{"route, anonymous", ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "orders"}, nil), auth.Credentials{},
			remoting.NoPermission, "anonymous"},
		{"route, SUB is enough", ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "orders"}, nil), aclBob,
			remoting.Success, ""},
		{"route, no permission", ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "orders"}, nil), aclCarol,
			remoting.NoPermission, "no ANY on topic orders"},
		{"delete topic in name server, not admin", ns, remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "orders"}, nil),
			aclAlice, remoting.NoPermission, "code 216 needs an admin"},
		{"KV, not admin", ns, remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "n", "key": "k", "value": "v"}, nil),
			aclAlice, remoting.NoPermission, "code 100 needs an admin"},
		{"fake broker, anonymous", ns, fake, auth.Credentials{}, remoting.NoPermission, "anonymous"},
		{"fake broker, not admin", ns, cloneCmd(fake), aclAlice, remoting.NoPermission, "code 103 needs an admin"},
		{"wipe write perm, not admin", ns, remoting.NewRequest(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil),
			aclAlice, remoting.NoPermission, "code 205"},
		{"update namesrv config, admin", ns, remoting.NewRequest(318, nil, []byte("configStorePath=/tmp/x")), aclAdmin, remoting.RequestCodeNotSupported, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := signedInvoke(t, c.addr, c.req, c.creds)
			if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) {
				t.Fatalf("code %d remark %q, want %d with %q", resp.Code, resp.Remark, c.code, c.remark)
			}
			if strings.Contains(resp.Remark, "secret\"") || strings.Contains(resp.Remark, "-secret") {
				t.Fatalf("remark shows a secret: %q", resp.Remark)
			}
		})
	}
	// Nothing changed: one message (the right key's), no new topic, the
	// name server's routes and brokers as they were, the KV untouched.
	waitFor(t, 5*time.Second, "the right key's message to be dispatched", func() bool { return storedIn(n, "orders", 1) >= 1 })
	time.Sleep(100 * time.Millisecond) // a refused one would be dispatched by now too
	if got := storedIn(n, "orders", 1); got != 1 {
		t.Errorf("orders holds %d messages, want 1", got)
	}
	if hasTopic(n, "evil") {
		t.Error("a non-admin created a topic")
	}
	if got := brokerInfo(); got != infoBefore || strings.Contains(got, "10.6.6.6") {
		t.Errorf("cluster info changed: %s", got)
	}
	if r := signedInvoke(t, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "orders"}, nil), aclAdmin); r.Code != remoting.Success ||
		strings.Contains(string(r.Body), `"perm":4`) {
		t.Errorf("route of orders: %d %s", r.Code, r.Body)
	}
	if r := signedInvoke(t, ns, remoting.NewRequest(remoting.GetKVConfig, map[string]string{"namespace": "n", "key": "k"}, nil), aclAdmin); r.Code != remoting.QueryNotFound {
		t.Errorf("KV: %d %s", r.Code, r.Remark)
	}
	if r := signedInvoke(t, b, remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), aclAdmin); r.Code != remoting.Success ||
		strings.Contains(string(r.Body), "maxMessageSize=1\n") {
		t.Errorf("broker config: %d %s", r.Code, r.Body)
	}
	// Every refusal was counted.
	if got := metricValue(t, n, "wheelmq_auth_refused_total"); got < 18 {
		t.Errorf("wheelmq_auth_refused_total = %v", got)
	}
}

func withConsumerCreds(c auth.Credentials) []consumer.Option {
	return []consumer.Option{consumer.WithCredentials(goCreds(c))}
}

func cloneCmd(c *remoting.Command) *remoting.Command {
	cp := *c
	cp.ExtFields = map[string]string{}
	for k, v := range c.ExtFields {
		cp.ExtFields[k] = v
	}
	return &cp
}
