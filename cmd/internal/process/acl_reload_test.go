package process_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// A rewrite of the file grants bob PUB within seconds, a replace by
// rename (as editors write) takes it back, and a bad file keeps the last
// good one in force.
func TestACLReload(t *testing.T) {
	n, path := startACLNode(t, aclFile("orders=SUB"))
	createTopicAs(t, n, aclAdmin, "orders", 1)
	send := func() int32 {
		return signedInvoke(t, n.BrokerAddr(), processtest.SendRequest("orders", 0, []byte("b"), nil), aclBob).Code
	}
	if c := send(); c != remoting.NoPermission {
		t.Fatalf("bob before the grant: %d", c)
	}
	if err := os.WriteFile(path, []byte(aclFile("orders=PUB|SUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the rewritten file to grant PUB", func() bool { return send() == remoting.Success })

	tmp := path + ".swp"
	if err := os.WriteFile(tmp, []byte(aclFile("orders=SUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the renamed file to take PUB back", func() bool { return send() == remoting.NoPermission })

	if err := os.WriteFile(path, []byte(aclFile("orders=PUB")+"  - accessKey: broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the bad file to be refused", func() bool { return metricValue(t, n, "wheelmq_acl_load_errors_total") >= 1 })
	if c := send(); c != remoting.NoPermission {
		t.Fatalf("a bad file changed the rules: %d", c)
	}
	if v := metricValue(t, n, "wheelmq_acl_config_version"); v != 3 {
		t.Fatalf("config version %v, want 3", v)
	}
	if v := metricValue(t, n, "wheelmq_acl_config_stale"); v != 1 {
		t.Fatalf("config stale %v", v)
	}
}

// A bad file at start: the process does not start, and says why.
func TestACLBadFileAtStart(t *testing.T) {
	path := t.TempDir() + "/plain_acl.yml"
	if err := os.WriteFile(path, []byte("accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := process.Config{NamesrvListen: "127.0.0.1:0", ACL: process.ACLConfig{File: path}}
	_, err := process.Start(cfg)
	if err == nil || !strings.Contains(err.Error(), "plain_acl.yml:2: account rocketmq2") ||
		!strings.Contains(err.Error(), "published default account") {
		t.Fatalf("start: %v", err)
	}
}

// Requests that name their message by offset or id are checked against
// the message's topic once it is read: the timer cancel (3501) needs PUB,
// the view by id (33) SUB, the send-back (36) SUB on the message's topic
// besides the group (else SUB on any group would read any message through
// its retry topic).
func TestACLDeferredChecks(t *testing.T) {
	n, _ := startACLNode(t, aclFile("orders=SUB"))
	createTopicAs(t, n, aclAdmin, "orders", 1)
	b := n.BrokerAddr()
	due := time.Now().Add(time.Minute).UnixMilli()
	timed := processtest.SendRequest("orders", 0, []byte("timed"), map[string]string{
		message.PropTimerDeliverMS: itoa(due), message.PropUniqKey: "ACLTIMER0001"})
	resp := signedInvoke(t, b, timed, aclAlice)
	if resp.Code != remoting.Success {
		t.Fatalf("timer send: %d %s", resp.Code, resp.Remark)
	}
	timerID := resp.Field("msgId")
	plain := signedInvoke(t, b, processtest.SendRequest("orders", 0, []byte("plain"), nil), aclAlice)
	plainID := plain.Field("msgId")
	_, plainOff, err := message.ParseOffsetMsgID(plainID)
	if err != nil {
		t.Fatal(err)
	}
	cancel := func() *remoting.Command {
		return remoting.NewRequest(remoting.CancelTimerMessage, map[string]string{"msgId": timerID}, nil)
	}
	view := func() *remoting.Command {
		return remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": itoa(plainOff)}, nil)
	}
	sendBack := func(group string) *remoting.Command {
		return remoting.NewRequest(remoting.ConsumerSendMsgBack, map[string]string{"group": group, "offset": itoa(plainOff),
			"delayLevel": "1", "originMsgId": plainID, "originTopic": "orders", "maxReconsumeTimes": "3"}, nil)
	}
	for _, c := range []struct {
		name   string
		req    *remoting.Command
		creds  auth.Credentials
		code   int32
		remark string
	}{
		{"cancel without PUB", cancel(), aclBob, remoting.NoPermission, "no PUB on topic orders (rule topicPerms orders=SUB)"},
		{"cancel without anything", cancel(), aclCarol, remoting.NoPermission, "no PUB on topic orders"},
		{"view without SUB", view(), aclCarol, remoting.NoPermission, "no SUB on topic orders"},
		{"view with SUB", view(), aclBob, remoting.Success, ""},
		{"send-back without SUB on the message's topic", sendBack("g_carol"), aclCarol, remoting.NoPermission, "no SUB on topic orders"},
		{"send-back without SUB on the group", sendBack("g_alice"), aclBob, remoting.NoPermission, "no SUB on group g_alice"},
		{"send-back", sendBack("g_bob"), aclBob, remoting.Success, ""},
		{"cancel with PUB", cancel(), aclAlice, remoting.Success, ""},
	} {
		resp := signedInvoke(t, b, c.req, c.creds)
		if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) {
			t.Errorf("%s: code %d remark %q, want %d with %q", c.name, resp.Code, resp.Remark, c.code, c.remark)
		}
	}
	if storedIn(n, "%RETRY%g_carol", 1) != 0 || hasTopic(n, "%RETRY%g_alice") {
		t.Error("a refused send-back stored something")
	}
}

// A broker that cannot prove itself is not registered with a separate
// name server that has an ACL; one signing with an admin account is.
func TestACLBrokerRegistration(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	path := t.TempDir() + "/plain_acl.yml"
	if err := os.WriteFile(path, []byte(aclFile("orders=SUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	nsNode := processtest.Start(t, processtest.Options{MutateNode: func(c *process.Config) {
		c.RunBroker = false
		c.ACL = process.ACLConfig{File: path}
	}})
	ns := nsNode.NamesrvAddr()
	start := func(name string, creds auth.Credentials) *process.Node {
		return processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) {
			c.NameServers, c.BrokerName, c.RegisterCredentials = []string{ns}, name, access.Credentials(creds)
		}, MutateNode: func(c *process.Config) { c.NamesrvListen = "" }})
	}
	good := start("broker-signed", aclAdmin)
	bad := start("broker-alice", aclAlice)
	info := func() string {
		return string(signedInvoke(t, ns, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), aclAdmin).Body)
	}
	waitFor(t, 10*time.Second, "the signed broker's registration", func() bool { return strings.Contains(info(), good.BrokerAddr()) })
	time.Sleep(1500 * time.Millisecond) // a registration period of the test brokers, and a retry
	if strings.Contains(info(), bad.BrokerAddr()) || strings.Contains(info(), "broker-alice") {
		t.Fatalf("a non-admin broker was registered: %s", info())
	}
}

// Hostile input on the authenticated path: garbage signatures, huge keys
// and 10,000 refused requests over many connections; the broker keeps
// serving an authorized client throughout, and memory stays bounded.
func TestACLHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 refused requests")
	}
	n, _ := startACLNode(t, aclFile("orders=SUB"))
	createTopicAs(t, n, aclAdmin, "orders", 1)
	b := n.BrokerAddr()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	hostile := func(i int) *remoting.Command {
		req := processtest.SendRequest("orders", 0, []byte("x"), nil)
		switch i % 4 {
		case 0:
			req.ExtFields[auth.FieldAccessKey], req.ExtFields[auth.FieldSignature] = "alice-app", strings.Repeat("A", i%50)
		case 1:
			req.ExtFields[auth.FieldAccessKey], req.ExtFields[auth.FieldSignature] = strings.Repeat("k", 64<<10), "garbage=="
		case 2:
			aclAlice.Sign(req)
			req.ExtFields[auth.FieldSignature] = "\x00\xff" + req.ExtFields[auth.FieldSignature][2:]
		case 3:
			aclBob.Sign(req) // signed, without PUB
		}
		return req
	}
	const conns, perConn = 50, 200
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan string, conns)
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := remoting.Dial(ctx, b, remoting.ClientOptions{})
			if err != nil {
				errs <- err.Error()
				return
			}
			defer cl.Close()
			for i := range perConn {
				resp, err := cl.Invoke(ctx, hostile(c*perConn+i))
				if err != nil {
					errs <- err.Error()
					return
				}
				if resp.Code != remoting.NoPermission {
					errs <- "hostile request answered " + itoa(int64(resp.Code)) + " " + resp.Remark
					return
				}
			}
		}()
	}
	// Meanwhile the authorized client is served.
	for i := range 20 {
		if r := signedInvoke(t, b, processtest.SendRequest("orders", 0, []byte("ok"), nil), aclAlice); r.Code != remoting.Success {
			t.Fatalf("authorized send %d during the flood: %d %s", i, r.Code, r.Remark)
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// New connections, each refused once (connection churn).
	for i := range 500 {
		if r := signedInvoke(t, b, hostile(i), auth.Credentials{}); r.Code != remoting.NoPermission {
			t.Fatalf("connection %d: %d", i, r.Code)
		}
	}
	if r := signedInvoke(t, b, processtest.SendRequest("orders", 0, []byte("ok"), nil), aclAlice); r.Code != remoting.Success {
		t.Fatalf("authorized send after the flood: %d %s", r.Code, r.Remark)
	}
	waitFor(t, 5*time.Second, "the 21 authorized messages to be dispatched", func() bool { return storedIn(n, "orders", 1) >= 21 })
	if got := storedIn(n, "orders", 1); got != 21 {
		t.Fatalf("orders holds %d messages, want the authorized 21", got)
	}
	if got := metricValue(t, n, "wheelmq_auth_refused_total"); got < conns*perConn+500 {
		t.Fatalf("refusals counted %v", got)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 64<<20 {
		t.Fatalf("heap grew by %d MiB over the flood", grow>>20)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// An empty file and a truncated one (a tool that truncates, then
// rewrites) change nothing: each reload is refused and counted, and a
// signed request is still accepted.
func TestACLReloadEmptyOrTruncatedKeepsRules(t *testing.T) {
	n, path := startACLNode(t, aclFile("orders=SUB"))
	createTopicAs(t, n, aclAdmin, "orders", 1)
	send := func() int32 {
		return signedInvoke(t, n.BrokerAddr(), processtest.SendRequest("orders", 0, []byte("a"), nil), aclAlice).Code
	}
	if c := send(); c != remoting.Success {
		t.Fatalf("alice before: %d", c)
	}
	full := aclFile("orders=SUB")
	for i, content := range []string{"", full[:strings.Index(full, "admin: true")]} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "the reload to be refused", func() bool {
			return metricValue(t, n, "wheelmq_acl_load_errors_total") >= float64(i+1)
		})
		if c := send(); c != remoting.Success {
			t.Fatalf("file %d: alice refused after a refused reload: %d", i, c)
		}
		if r := createTopicAs(t, n, aclAdmin, "orders"+strconv.Itoa(i), 1); r.Code != remoting.Success {
			t.Fatalf("file %d: admin refused: %d %s", i, r.Code, r.Remark)
		}
	}
	if v := metricValue(t, n, "wheelmq_acl_config_version"); v != 1 {
		t.Fatalf("config version %v, want 1", v)
	}
}
