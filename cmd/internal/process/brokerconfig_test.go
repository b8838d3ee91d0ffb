package process_test

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// goldenFrame reads testdata/<name>.hex: hex digits, '#' comments.
func goldenFrame(t *testing.T, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// rawInvoke writes a frame as it is to addr and reads one answer.
func rawInvoke(t *testing.T, addr string, frame []byte) *remoting.Command {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	resp, err := remoting.ReadFrame(conn, remoting.DefaultMaxFrame)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return resp
}

// brokerConfig is a GET_BROKER_CONFIG answer read back.
type brokerConfig struct {
	version meta.DataVersion
	values  map[string]string
}

func readBrokerConfig(t *testing.T, resp *remoting.Command) brokerConfig {
	t.Helper()
	mustOK(t, "get broker config", resp)
	var bc brokerConfig
	if err := json.Unmarshal([]byte(resp.Field("version")), &bc.version); err != nil {
		t.Fatalf("version header %q: %v", resp.Field("version"), err)
	}
	entries, err := javaprops.Parse(resp.Body)
	if err != nil {
		t.Fatalf("body: %v\n%s", err, resp.Body)
	}
	bc.values = map[string]string{}
	for _, e := range entries {
		bc.values[e.Key] = e.Value
	}
	return bc
}

func getBrokerConfig(t *testing.T, n *process.Node) brokerConfig {
	t.Helper()
	return readBrokerConfig(t, call(t, n.BrokerAddr(), remoting.GetBrokerConfig, nil, nil))
}

func updateBrokerConfig(t *testing.T, n *process.Node, body string) *remoting.Command {
	t.Helper()
	return call(t, n.BrokerAddr(), remoting.UpdateBrokerConfig, nil, []byte(body))
}

// TestBrokerConfig drives GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG with
// the frames a Java client sends and with raw requests: the configuration
// is listed under RocketMQ's keys, an allowed change takes effect at once
// and bumps the version, and a fixed key, a path, a credential, an unknown
// key or a bad value is refused by name with nothing changed.
func TestBrokerConfig(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	var usage atomic.Uint64
	usage.Store(math.Float64bits(0.5))
	var level atomic.Int32
	level.Store(int32(zerolog.WarnLevel))
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir, Mutate: func(c *pipeline.Config) {
		c.DiskUsage = func() (float64, error) { return math.Float64frombits(usage.Load()), nil }
		c.SetLogLevel = func(l zerolog.Level) { level.Store(int32(l)) }
	}})
	topic := processtest.Unique("bconf")
	processtest.CreateTopic(t, n, topic, 1)

	// The Java frame of mqadmin getBrokerConfig.
	get := goldenFrame(t, "java_get_broker_config")
	if cmd, err := remoting.DecodeFrame(get[4:]); err != nil || cmd.Code != remoting.GetBrokerConfig || cmd.Language != "JAVA" ||
		len(cmd.ExtFields) != 0 || len(cmd.Body) != 0 {
		t.Fatalf("golden GET frame decodes to %+v, %v", cmd, err)
	}
	resp := rawInvoke(t, n.BrokerAddr(), get)
	if resp.Opaque != 1 {
		t.Fatalf("answer opaque %d, want 1", resp.Opaque)
	}
	first := readBrokerConfig(t, resp)
	_, port, _ := net.SplitHostPort(n.BrokerAddr())
	for key, want := range map[string]string{
		"brokerName": "broker-a", "brokerClusterName": "DefaultCluster", "brokerId": "0", "listenPort": port,
		"brokerIP1": "127.0.0.1", "namesrvAddr": n.NamesrvAddr(), "storePathRootDir": dir, "flushDiskType": "ASYNC_FLUSH",
		"maxMessageSize": "4194304", "fileReservedTime": "72", "deleteWhen": "04", "diskMaxUsedSpaceRatio": "75",
		"diskSpaceWarningLevelRatio": "90", "log-level": "warn", "max-conn-requests": "4096",
	} {
		if got, ok := first.values[key]; !ok || got != want {
			t.Errorf("%s = %q (listed %v), want %q", key, got, ok, want)
		}
	}
	for key := range first.values {
		if k := strings.ToLower(key); strings.Contains(k, "secret") || strings.Contains(k, "accesskey") || strings.Contains(k, "password") {
			t.Errorf("credential-like key %s listed", key)
		}
	}
	if first.version.Counter != 0 || first.version.Timestamp == 0 {
		t.Errorf("first version %+v, want counter 0 and the start time", first.version)
	}

	// The Java frame of mqadmin updateBrokerConfig -k fileReservedTime -v 48.
	resp = rawInvoke(t, n.BrokerAddr(), goldenFrame(t, "java_update_broker_config"))
	mustOK(t, "update fileReservedTime", resp)
	after := getBrokerConfig(t, n)
	if after.values["fileReservedTime"] != "48" || after.version.Counter != 1 || after.version.Timestamp < first.version.Timestamp {
		t.Fatalf("after the update: fileReservedTime=%s version %+v", after.values["fileReservedTime"], after.version)
	}
	if got := n.Broker().Pipeline().Settings().Retention; got != 48*time.Hour {
		t.Fatalf("retention in force %s, want 48h", got)
	}

	// A file path beside an allowed key (the CVE-2023-33246 shape): refused
	// whole.
	resp = rawInvoke(t, n.BrokerAddr(), goldenFrame(t, "java_update_broker_config_path"))
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, "brokerConfigPath") {
		t.Fatalf("path update answered %d %q", resp.Code, resp.Remark)
	}

	for _, c := range []struct {
		body string
		code int32
		name string // in the remark
	}{
		{"brokerName=other\n", remoting.NoPermission, "brokerName: fixed while the broker runs"},
		{"storePathRootDir=/tmp\n", remoting.NoPermission, "storePathRootDir: names a file or directory"},
		{"rocketmqHome=/tmp\nmaxMessageSize=1024\n", remoting.NoPermission, "rocketmqHome"},
		{"secretKey=abc\n", remoting.NoPermission, "secretKey: a credential"},
		{"noSuchKey=1\n", remoting.InvalidParameter, "noSuchKey: wheelmq has no such setting"},
		{"maxMessageSize=lots\n", remoting.InvalidParameter, `maxMessageSize="lots"`},
		{"maxMessageSize=99999999\n", remoting.InvalidParameter, "raise --max-message-size and restart"},
		{"diskSpaceWarningLevelRatio=40\n", remoting.InvalidParameter, "must not fall from clean"},
		{"deleteWhen=25\n", remoting.InvalidParameter, "deleteWhen"},
		{"maxMessageSize=\\u12\n", remoting.InvalidParameter, "not Java properties text"},
	} {
		resp := updateBrokerConfig(t, n, c.body)
		if resp.Code != c.code || !strings.Contains(resp.Remark, c.name) {
			t.Errorf("update %q answered %d %q, want %d naming %q", c.body, resp.Code, resp.Remark, c.code, c.name)
		}
	}
	if got := getBrokerConfig(t, n); got.version.Counter != 1 || got.values["fileReservedTime"] != "48" ||
		got.values["maxMessageSize"] != "4194304" || got.values["brokerName"] != "broker-a" {
		t.Fatalf("refused updates changed something: version %+v, %v", got.version, got.values)
	}
	mustOK(t, "empty update", updateBrokerConfig(t, n, ""))

	// maxMessageSize takes effect on the next send.
	send := func(size int) *remoting.Command {
		return processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(topic, 0, []byte(strings.Repeat("x", size)), nil))
	}
	mustOK(t, "send 2000 bytes", send(2000))
	mustOK(t, "lower maxMessageSize", updateBrokerConfig(t, n, "maxMessageSize=1024\n"))
	if resp := send(2000); resp.Code != remoting.MessageIllegal || !strings.Contains(resp.Remark, "1024") {
		t.Fatalf("2000 bytes over a limit of 1024 answered %d %q", resp.Code, resp.Remark)
	}
	mustOK(t, "send 1000 bytes", send(1000))

	// The disk marks take effect at the retention stage's next sample (disk
	// use is 50%): sends are refused past the new full ratio, accepted
	// again below the old one.
	mustOK(t, "lower the disk marks", updateBrokerConfig(t, n,
		"diskMaxUsedSpaceRatio=30\ndiskSpaceCleanForciblyRatio=35\ndiskSpaceWarningLevelRatio=40\n"))
	waitDisk(t, n, true)
	if resp := send(10); resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send past the lowered full ratio answered %d %q", resp.Code, resp.Remark)
	}
	mustOK(t, "restore the disk marks", updateBrokerConfig(t, n,
		"diskSpaceWarningLevelRatio=90\ndiskMaxUsedSpaceRatio=75\ndiskSpaceCleanForciblyRatio=85\n"))
	waitDisk(t, n, false)
	mustOK(t, "send below the restored full ratio", send(10))

	// Without auto-creation a pull of an unknown group is refused.
	pull := func(group string) *remoting.Command {
		return processtest.Invoke(t, n.BrokerAddr(), processtest.PullRequest(group, topic, 0, 0, 1))
	}
	if resp := pull(processtest.Unique("bconf_g")); resp.Code == remoting.SubscriptionGroupNotExist {
		t.Fatalf("pull of a new group with auto-creation on: %d %q", resp.Code, resp.Remark)
	}
	mustOK(t, "auto-creation off", updateBrokerConfig(t, n, "autoCreateSubscriptionGroup=false\n"))
	if resp := pull(processtest.Unique("bconf_g")); resp.Code != remoting.SubscriptionGroupNotExist {
		t.Fatalf("pull of a new group with auto-creation off: %d %q", resp.Code, resp.Remark)
	}

	// The log level goes to the process's switch.
	mustOK(t, "log level", updateBrokerConfig(t, n, "log-level=debug\n"))
	if zerolog.Level(level.Load()) != zerolog.DebugLevel {
		t.Fatalf("log level handed on: %v", zerolog.Level(level.Load()))
	}
	final := getBrokerConfig(t, n)
	if final.version.Counter != 6 || final.values["maxMessageSize"] != "1024" || final.values["log-level"] != "debug" ||
		final.values["diskSpaceWarningLevelRatio"] != "90" {
		t.Fatalf("final configuration: version %+v, %v", final.version, final.values)
	}
}
