package nsrvcodec

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// startKVActor spawns the registry actor with its KV configuration in
// path, on fs.
func startKVActor(t *testing.T, opts namesrv.Options) *stage.Stage {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	reg := stage.NewRegistry(nil)
	st, err := reg.Spawn(system, supervisor.New(supervisor.Policy{OnRestart: reg.Restarted, Retire: reg.Retire}),
		"namesrv", namesrv.Producer(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Stop()
		system.Shutdown()
	})
	return st
}

// TestActorKVPersisted: the actor writes kvConfig.json before it answers a
// change, reads it back on a restart (the route table starts empty, the KV
// configuration does not), and answers SYSTEM_ERROR, changing nothing,
// when the write fails.
func TestActorKVPersisted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "namesrv", namesrv.KVConfigFile)
	fs := &vfstest.FaultFS{}
	logs := &syncBuffer{}
	st := startKVActor(t, namesrv.Options{Logger: zerolog.New(logs), KVConfigPath: path, FS: fs, OrderMessageEnable: true})

	if resp := ask(t, st, putReq(namesrv.NamespaceOrderTopicConfig, "T", "broker-a:2")); resp.Code != remoting.Success {
		t.Fatalf("put: %d %s", resp.Code, resp.Remark)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no file after the answer: %v", err)
	}
	onDisk, err := namesrv.ParseKVConfig(data)
	if v, _ := onDisk.Get(namesrv.NamespaceOrderTopicConfig, "T"); err != nil || v != "broker-a:2" {
		t.Fatalf("file %s (%v)", data, err)
	}

	req, err := NewRegisterRequest(master("broker-a", "10.0.0.1:10911"), topics(topic("T", 4)), namesrv.DataVersion{})
	if err != nil {
		t.Fatal(err)
	}
	if resp := ask(t, st, req); string(resp.Body) != `{"table":{"T":"broker-a:2"}}` {
		t.Fatalf("register answer body %s", resp.Body)
	}
	if resp := ask(t, st, routeReq("T")); !strings.Contains(string(resp.Body), `"orderTopicConf":"broker-a:2"`) {
		t.Fatalf("route %s", resp.Body)
	}

	// A restart (a panicking Reply fails the actor) reloads the file.
	Serve(st, routeReq("T"), 0, nil, func(*remoting.Command) { panic("reply failed") })
	if resp := ask(t, st, routeReq("T")); resp.Code != remoting.TopicNotExist {
		t.Fatalf("route table after restart: %d", resp.Code)
	}
	if resp := ask(t, st, getReq(namesrv.NamespaceOrderTopicConfig, "T")); resp.Field(fieldValue) != "broker-a:2" {
		t.Fatalf("kv after restart: %d %q", resp.Code, resp.Remark)
	}

	// A full disk: the change is refused and not made, the file unchanged.
	fs.Full(true)
	resp := ask(t, st, putReq(namesrv.NamespaceOrderTopicConfig, "T", "broker-a:4"))
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, path) {
		t.Fatalf("put on a full disk: %d %q", resp.Code, resp.Remark)
	}
	if resp := ask(t, st, deleteReq(namesrv.NamespaceOrderTopicConfig, "T")); resp.Code != remoting.SystemError {
		t.Fatalf("delete on a full disk: %d %q", resp.Code, resp.Remark)
	}
	fs.Full(false)
	if resp := ask(t, st, getReq(namesrv.NamespaceOrderTopicConfig, "T")); resp.Field(fieldValue) != "broker-a:2" {
		t.Fatalf("a refused change was made: %q", resp.Field(fieldValue))
	}
	if again, _ := os.ReadFile(path); string(again) != string(data) {
		t.Fatalf("file changed by refused writes: %s", again)
	}
	if resp := ask(t, st, deleteReq(namesrv.NamespaceOrderTopicConfig, "T")); resp.Code != remoting.Success {
		t.Fatalf("delete: %d %q", resp.Code, resp.Remark)
	}
	after, err := namesrv.LoadKVConfig(nil, path)
	if err != nil || after.Len() != 0 {
		t.Fatalf("file after delete: %+v %v", after, err)
	}

	out := logs.String()
	for _, want := range []string{`"message":"namesrv: kv config item put"`, `"message":"namesrv: kv config item deleted"`,
		`"message":"namesrv: persist kv config failed"`, `"namespace":"ORDER_TOPIC_CONFIG"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

// TestActorKVInMemory: without a path nothing is written and the KV
// configuration is served from memory.
func TestActorKVInMemory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	st := startKVActor(t, namesrv.Options{})
	if resp := ask(t, st, putReq("ns", "k", "v")); resp.Code != remoting.Success {
		t.Fatalf("put: %d", resp.Code)
	}
	if resp := ask(t, st, getReq("ns", "k")); resp.Field(fieldValue) != "v" {
		t.Fatalf("get: %d %q", resp.Code, resp.Remark)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("in-memory KV wrote %v", entries)
	}
}

// TestActorKVDamagedFile: a kvConfig.json that does not load fails every
// start of the actor, so the supervisor stops it for good, naming the file;
// requests are then answered SYSTEM_ERROR and the file is left as it is.
func TestActorKVDamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), namesrv.KVConfigFile)
	damaged := []byte(`{"configTable":{"ORDER_TOPIC_CONFIG":"oops"}}`)
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	reg := stage.NewRegistry(nil)
	policy := supervisor.Policy{Initial: time.Millisecond, Max: time.Millisecond, MaxRestarts: 2, Window: time.Minute,
		OnRestart: reg.Restarted, Retire: reg.Retire}
	st, err := reg.Spawn(system, supervisor.New(policy), "namesrv", namesrv.Producer(namesrv.Options{KVConfigPath: path}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Stop()
		system.Shutdown()
	})
	deadline := time.Now().Add(10 * time.Second)
	for st.Down() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the stage kept running on a damaged kvConfig.json")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := st.Down(); !strings.Contains(d.Error(), path) {
		t.Fatalf("down cause does not name the file: %v", d)
	}
	if resp := ask(t, st, getReq("ns", "k")); resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, path) {
		t.Fatalf("request to the stopped stage: %d %q", resp.Code, resp.Remark)
	}
	if got, _ := os.ReadFile(path); string(got) != string(damaged) {
		t.Fatal("the damaged file was changed")
	}
}
