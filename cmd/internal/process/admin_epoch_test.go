package process_test

// Issue 28 item 5: the Java admin's last codes. GET_BROKER_EPOCH_CACHE
// (1007) on a replicated broker, GET_CONTROLLER_CONFIG (1010) and
// UPDATE_CONTROLLER_CONFIG (1009) on the controller, in RocketMQ 5's
// layouts (mqadmin getBrokerEpoch, getControllerConfig,
// updateControllerConfig), admin-only under an ACL.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// startOneController runs a name server with a one-node controller and
// returns its address.
func startOneController(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	n, err := process.Start(process.Config{NamesrvListen: "127.0.0.1:0", NamesrvDir: filepath.Join(dir, "namesrv"),
		Controller: controller.Config{Listen: processtest.ReserveAddr(t), Dir: filepath.Join(dir, "controller")}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	return n.NamesrvAddr()
}

// epochCache asks addr for 1007 and decodes the answer, checking the
// body is RocketMQ's layout (fastjson: keys in alphabetical order).
func epochCache(t *testing.T, addr string) adminbody.EpochEntryCache {
	t.Helper()
	resp := mustOK(t, "GET_BROKER_EPOCH_CACHE", call(t, addr, remoting.GetBrokerEpochCache, nil, nil))
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(resp.Body, &raw); err != nil {
		t.Fatalf("1007 body %s: %v", resp.Body, err)
	}
	if !strings.HasPrefix(string(resp.Body), `{"brokerId":`) || len(raw) != 5 || raw["epochList"] == nil || raw["maxOffset"] == nil || raw["clusterName"] == nil {
		t.Fatalf("1007 body is not an EpochEntryCache: %s", resp.Body)
	}
	var ec adminbody.EpochEntryCache
	if err := json.Unmarshal(resp.Body, &ec); err != nil {
		t.Fatal(err)
	}
	return ec
}

// TestBrokerEpochCache: each member of a replicated group answers 1007
// with its own epoch file: one open epoch while the first master leads,
// two once the replica took over (the first ending where the second
// starts); a standalone broker refuses it as Java's does.
func TestBrokerEpochCache(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	ns := []string{startOneController(t)}
	a := startMember(t, ns)
	haWait(t, "first member master", func() bool {
		return strings.Contains(haGet(t, "http://"+a.MetricsAddr()+"/healthz"), "role: master")
	})
	b := startMember(t, ns)
	haWait(t, "second member in the sync-state set", func() bool {
		return strings.Contains(haGet(t, "http://"+a.MetricsAddr()+"/healthz"), "sync_state_set=[1 2]")
	})
	topic := processtest.Unique("epoch")
	mustOK(t, "create topic", call(t, a.BrokerAddr(), remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil))
	sendRaw(t, a.BrokerAddr(), topic, 0, "one", "two", "three")

	// The broker appends metadata records of its own at any time: the
	// answer's maxOffset lies between the CommitLog's end before and after.
	cl := a.Broker().Store().CommitLog
	before := cl.MaxOffset()
	ec := epochCache(t, a.BrokerAddr())
	end := cl.MaxOffset()
	want := []adminbody.EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: adminbody.OpenEnd}}
	if ec.BrokerID != 0 || ec.BrokerName != "broker-a" || ec.ClusterName == "" || ec.MaxOffset < before || ec.MaxOffset > end ||
		before == 0 || fmt.Sprint(ec.EpochList) != fmt.Sprint(want) {
		t.Fatalf("master's 1007: %+v (CommitLog end %d before, %d after)", ec, before, end)
	}
	rl := b.Broker().Store().CommitLog
	haWait(t, "replica caught up", func() bool { return rl.MaxOffset() >= end })
	before = rl.MaxOffset()
	ec = epochCache(t, b.BrokerAddr())
	if ec.BrokerID != 2 || ec.MaxOffset < before || ec.MaxOffset > rl.MaxOffset() || fmt.Sprint(ec.EpochList) != fmt.Sprint(want) {
		t.Fatalf("replica's 1007: %+v (its CommitLog end %d before)", ec, before)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("stop the master: %v", err)
	}
	haWait(t, "replica promoted", func() bool {
		return strings.Contains(haGet(t, "http://"+b.MetricsAddr()+"/healthz"), "role: master")
	})
	ec = epochCache(t, b.BrokerAddr())
	// Epoch 1 ends where the promoted replica's CommitLog ended at its
	// promotion: past what it had caught up to, within what it holds now.
	if cut := ec.EpochList; ec.BrokerID != 0 || len(cut) != 2 || cut[0].Epoch != 1 || cut[0].StartOffset != 0 ||
		cut[0].EndOffset < before || cut[0].EndOffset > rl.MaxOffset() ||
		cut[1] != (adminbody.EpochEntry{Epoch: 2, StartOffset: cut[0].EndOffset, EndOffset: adminbody.OpenEnd}) {
		t.Fatalf("promoted replica's 1007: %+v, want epoch 1 from 0 to its promotion (at least %d), then epoch 2 open", ec, before)
	}

	st := processtest.Start(t, processtest.Options{})
	if resp := call(t, st.BrokerAddr(), remoting.GetBrokerEpochCache, nil, nil); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "controller mode") {
		t.Fatalf("standalone 1007: %d %q", resp.Code, resp.Remark)
	}
}

// controllerConfig asks for 1010 through sign and parses the properties
// body.
func controllerConfig(t *testing.T, addr string, sign func(*remoting.Command) *remoting.Command) map[string]string {
	t.Helper()
	resp := mustOK(t, "GET_CONTROLLER_CONFIG", sign(remoting.NewRequest(remoting.GetControllerConfig, nil, nil)))
	entries, err := javaprops.Parse(resp.Body)
	if err != nil {
		t.Fatalf("1010 body %q: %v", resp.Body, err)
	}
	m := map[string]string{}
	for _, e := range entries {
		m[e.Key] = e.Value
	}
	return m
}

// TestControllerConfig: 1010 lists the controller's settings as properties
// text; 1009 changes the allow-listed ones at once, and refuses a fixed or
// path key (16), an unknown key or a bad value (29), changing nothing;
// under an ACL both are for admins only, and a non-admin or a stranger
// (unsigned) changes nothing; the broker's 1007 is admin-only too.
func TestControllerConfig(t *testing.T) {
	t.Parallel() // its own broker (and browser): overlaps with the package's other parallel tests
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclFile("orders=SUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	n := processtest.Start(t, processtest.Options{Admin: aclAdmin, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: time.Hour}
		c.Controller = controller.Config{Listen: processtest.ReserveAddr(t), Dir: filepath.Join(t.TempDir(), "controller")}
	}})
	ns := n.NamesrvAddr()
	admin := func(req *remoting.Command) *remoting.Command { return signedInvoke(t, ns, req, aclAdmin) }
	cfg := controllerConfig(t, ns, admin)
	for k, v := range map[string]string{"scanNotActiveBrokerInterval": "100", "controllerHeartBeatTimeoutMills": "3000",
		"enableElectUncleanMaster": "false", "controllerType": "hashicorp-raft", "controllerDLegerGroup": "wheelmq-controller"} {
		if cfg[k] != v {
			t.Errorf("1010 %s=%q, want %q (all: %v)", k, cfg[k], v, cfg)
		}
	}
	update := func(sign func(*remoting.Command) *remoting.Command, body string) *remoting.Command {
		return sign(remoting.NewRequest(remoting.UpdateControllerConfig, nil, []byte(body)))
	}
	mustOK(t, "1009 scan interval", update(admin, "scanNotActiveBrokerInterval=200\ncontrollerHeartBeatTimeoutMills=4000\n"))
	scanIs := func(want string) {
		t.Helper()
		if got := controllerConfig(t, ns, admin); got["scanNotActiveBrokerInterval"] != want || got["controllerHeartBeatTimeoutMills"] != "4000" {
			t.Fatalf("after updates: scan %q lease %q, want scan %s lease 4000", got["scanNotActiveBrokerInterval"], got["controllerHeartBeatTimeoutMills"], want)
		}
	}
	scanIs("200")
	for _, c := range []struct {
		body, remark string
		code         int32
	}{
		{"enableElectUncleanMaster=true\nscanNotActiveBrokerInterval=300", "enableElectUncleanMaster: fixed", remoting.NoPermission},
		{"controllerStorePath=/tmp/elsewhere", "controllerStorePath: names a file", remoting.NoPermission},
		{"configBlackList=none\nscanNotActiveBrokerInterval=300", "configBlackList", remoting.NoPermission},
		{"noSuchKey=1\nscanNotActiveBrokerInterval=300", "noSuchKey: wheelmq's controller has no such setting", remoting.InvalidParameter},
		{"controllerHeartBeatTimeoutMills=1000", "out of range [3000, 60000]", remoting.InvalidParameter},
		{"scanNotActiveBrokerInterval=soon", "not a whole number", remoting.InvalidParameter},
	} {
		resp := update(admin, c.body)
		if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) || !strings.Contains(resp.Remark, "nothing changed") {
			t.Errorf("1009 %q: %d %q, want %d naming %q", c.body, resp.Code, resp.Remark, c.code, c.remark)
		}
	}
	scanIs("200")

	alice := func(req *remoting.Command) *remoting.Command { return signedInvoke(t, ns, req, aclAlice) }
	stranger := func(req *remoting.Command) *remoting.Command { return processtest.Invoke(t, ns, req) }
	for who, sign := range map[string]func(*remoting.Command) *remoting.Command{"alice": alice, "a stranger": stranger} {
		if resp := sign(remoting.NewRequest(remoting.GetControllerConfig, nil, nil)); resp.Code != remoting.NoPermission || len(resp.Body) != 0 {
			t.Errorf("1010 by %s: %d %q", who, resp.Code, resp.Remark)
		}
		if resp := update(sign, "scanNotActiveBrokerInterval=500"); resp.Code != remoting.NoPermission {
			t.Errorf("1009 by %s: %d %q", who, resp.Code, resp.Remark)
		}
		if resp := sign(remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil)); resp.Code == remoting.Success {
			t.Errorf("the controller's 1007 by %s answered", who)
		}
		req := remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil)
		var resp *remoting.Command
		if who == "alice" {
			resp = signedInvoke(t, n.BrokerAddr(), req, aclAlice)
		} else {
			resp = processtest.Invoke(t, n.BrokerAddr(), req)
		}
		if resp.Code != remoting.NoPermission {
			t.Errorf("the broker's 1007 by %s: %d %q", who, resp.Code, resp.Remark)
		}
	}
	scanIs("200")
	if resp := signedInvoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil), aclAdmin); resp.Code != remoting.SystemError {
		t.Errorf("the standalone broker's 1007 by the admin: %d %q", resp.Code, resp.Remark)
	}
}
