package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/brokerconf"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseArgsDefaults(t *testing.T) {
	o, err := parseArgs(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := o.node.Broker
	if b.DataDir != "./wheelmq-data" || b.Listen != "0.0.0.0:10911" || o.node.NamesrvListen != "0.0.0.0:9876" ||
		o.node.MetricsListen != "127.0.0.1:9108" || !o.node.RunBroker || b.Flush != writer.FlushAsync || !b.AutoCreateTopic || !b.AutoCreateGroup ||
		b.TimerDequeueWorkers != 2 {
		t.Fatalf("unexpected defaults: %+v", o.node)
	}
}

func TestParseArgsEnvAndFlags(t *testing.T) {
	o, err := parseArgs([]string{"--flush", "sync", "--listen", "127.0.0.1:1", "--auto-create-group=false", "--timer-dequeue-workers", "4"},
		env(map[string]string{"WHEELMQ_DATA": "/tmp/x", "WHEELMQ_LISTEN": "127.0.0.1:2", "WHEELMQ_AUTO_CREATE_TOPIC": "false",
			"WHEELMQ_AUTO_CREATE_GROUP": "true"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := o.node.Broker
	if b.DataDir != "/tmp/x" || b.Listen != "127.0.0.1:1" || b.Flush != writer.FlushSync || b.AutoCreateTopic ||
		b.AutoCreateGroup || b.TimerDequeueWorkers != 4 {
		t.Fatalf("env/flags not applied (flag must win over env): %+v", b)
	}
}

func TestParseArgsRetention(t *testing.T) {
	o, err := parseArgs(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := o.node.Broker
	if b.Retention != 72*time.Hour || b.RetentionAt != "04:00" || b.DiskCleanRatio != 0.75 ||
		b.DiskForceCleanRatio != 0.85 || b.DiskFullRatio != 0.90 || b.SegmentSize != 1<<30 {
		t.Fatalf("retention defaults: %+v", b)
	}
	o, err = parseArgs([]string{"--retention", "48h", "--retention-at", "02:30;14:30", "--disk-full-ratio", "0.8",
		"--commitlog-segment-size", "67108864"},
		env(map[string]string{"WHEELMQ_DISK_CLEAN_RATIO": "0.6", "WHEELMQ_RETENTION": "1h"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b = o.node.Broker
	if b.Retention != 48*time.Hour || b.RetentionAt != "02:30;14:30" || b.DiskCleanRatio != 0.6 ||
		b.DiskFullRatio != 0.8 || b.DiskForceCleanRatio != 0.8 || b.SegmentSize != 64<<20 {
		t.Fatalf("retention flags: %+v", b)
	}
	_, err = parseArgs([]string{"--retention", "-1h", "--retention-at", "25:00", "--disk-full-ratio", "1.5",
		"--disk-clean-ratio", "0.95", "--commitlog-segment-size", "4096"}, env(nil), io.Discard)
	for _, want := range []string{"retention -1h0m0s", "retention time \"25:00\"", "disk full ratio 1.5",
		"commitlog segment size 4096"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestParseArgsReportsEveryProblem(t *testing.T) {
	_, err := parseArgs([]string{"--flush", "sometimes", "--listen", "nope", "--log-level", "loud", "--timer-dequeue-workers", "0"},
		env(map[string]string{"WHEELMQ_AUTO_CREATE_TOPIC": "maybe"}), io.Discard)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"flush mode", "listen address", "log level", "WHEELMQ_AUTO_CREATE_TOPIC", "timer dequeue workers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestParseArgsModes(t *testing.T) {
	o, err := parseArgs([]string{"namesrv"}, env(nil), io.Discard)
	if err != nil || o.node.RunBroker || o.node.NamesrvListen == "" {
		t.Fatalf("namesrv mode: %+v %v", o.node, err)
	}
	if _, err := parseArgs([]string{"broker"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "--namesrv") {
		t.Fatalf("broker mode without --namesrv: %v", err)
	}
	o, err = parseArgs([]string{"broker", "--namesrv", "127.0.0.1:9876;127.0.0.1:9877"}, env(nil), io.Discard)
	if err != nil || o.node.NamesrvListen != "" || len(o.node.Broker.NameServers) != 2 {
		t.Fatalf("broker mode: %+v %v", o.node, err)
	}
	if _, err := parseArgs([]string{"frobnicate"}, env(nil), io.Discard); err == nil {
		t.Fatal("unknown mode accepted")
	}
}

func TestParseArgsNamesrvListen(t *testing.T) {
	o, err := parseArgs([]string{"namesrv", "--listen", "127.0.0.1:19876"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.node.NamesrvListen != "127.0.0.1:19876" || o.node.RunBroker {
		t.Fatalf("namesrv --listen: name server on %q (broker %v), want 127.0.0.1:19876 only", o.node.NamesrvListen, o.node.RunBroker)
	}
	o, err = parseArgs([]string{"namesrv", "--namesrv-listen", "127.0.0.1:19877"}, env(nil), io.Discard)
	if err != nil || o.node.NamesrvListen != "127.0.0.1:19877" {
		t.Fatalf("namesrv --namesrv-listen still works: %q %v", o.node.NamesrvListen, err)
	}
	if _, err := parseArgs([]string{"namesrv", "--listen", "a:1", "--namesrv-listen", "b:2"}, env(nil), io.Discard); err == nil {
		t.Fatal("both --listen and --namesrv-listen in namesrv mode must be refused")
	}
}

func TestParseArgsRefusesFlagsOfOtherModes(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"namesrv", "--advertise", "10.0.0.1:10911"}, "--advertise means nothing in namesrv mode"},
		{[]string{"namesrv", "--flush", "sync"}, "--flush means nothing in namesrv mode"},
		{[]string{"broker", "--namesrv", "127.0.0.1:9876", "--order-message-enable"}, "--order-message-enable means nothing in broker mode"},
		{[]string{"broker", "--namesrv", "127.0.0.1:9876", "--namesrv-listen", "0.0.0.0:9876"}, "--namesrv-listen means nothing in broker mode"},
	}
	for _, c := range cases {
		_, err := parseArgs(c.args, env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to say %q", c.args, err, c.want)
		}
	}
	// The environment may carry settings for other modes: not an error.
	if _, err := parseArgs([]string{"namesrv"}, env(map[string]string{"WHEELMQ_ADVERTISE": "10.0.0.1:1"}), io.Discard); err != nil {
		t.Fatalf("WHEELMQ_ADVERTISE in namesrv mode: %v", err)
	}
}

// TestParseArgsNamesrvDir: the name server keeps its files in <data>/namesrv
// wherever it runs; a broker alone has none.
func TestParseArgsNamesrvDir(t *testing.T) {
	cases := []struct {
		args      []string
		env       map[string]string
		dir       string
		orderConf bool
	}{
		{args: nil, dir: filepath.Join("wheelmq-data", "namesrv")},
		{args: []string{"--data", "/var/lib/wmq"}, dir: "/var/lib/wmq/namesrv"},
		{args: []string{"namesrv"}, dir: filepath.Join("wheelmq-data", "namesrv")},
		{args: []string{"namesrv", "--data", "/srv/ns", "--order-message-enable"}, dir: "/srv/ns/namesrv", orderConf: true},
		{args: []string{"namesrv"}, env: map[string]string{"WHEELMQ_DATA": "/tmp/x"}, dir: "/tmp/x/namesrv"},
		{args: []string{"--order-message-enable=true"}, dir: filepath.Join("wheelmq-data", "namesrv"), orderConf: true},
		{args: []string{"broker", "--namesrv", "127.0.0.1:9876", "--data", "/srv/b"}, dir: ""},
	}
	for _, c := range cases {
		o, err := parseArgs(c.args, env(c.env), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.node.NamesrvDir != c.dir || o.node.OrderMessageEnable != c.orderConf {
			t.Errorf("%v %v: name server dir %q order %v, want %q %v", c.args, c.env,
				o.node.NamesrvDir, o.node.OrderMessageEnable, c.dir, c.orderConf)
		}
	}
}

func writeConf(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigFilePrecedence: the file sets what neither the environment nor
// the command line sets; the environment wins over the file, the command
// line over both.
func TestConfigFilePrecedence(t *testing.T) {
	conf := writeConf(t, "broker.conf", "brokerClusterName=C1\nbrokerName=from-file\nlistenPort=10921\n"+
		"storePathRootDir=/tmp/file\nflushDiskType=SYNC_FLUSH\nmaxMessageSize=1000\nbrokerIP1=10.1.2.3\n"+
		"namesrvAddr=10.0.0.1:9876\ndefaultTopicQueueNums=4\nmessageIndexEnable=false\ntransactionTimeOut=3000\n")
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(o options) string
	}{
		{"file only", []string{"--config", conf}, nil, func(o options) string {
			b := o.node.Broker
			if b.Cluster != "C1" || b.BrokerName != "from-file" || b.Listen != "0.0.0.0:10921" || b.DataDir != "/tmp/file" ||
				b.Flush != writer.FlushSync || b.MaxMessageSize != 1000 || b.Advertise != "10.1.2.3:10921" ||
				len(b.NameServers) != 1 || b.NameServers[0] != "10.0.0.1:9876" || b.DefaultQueueNums != 4 || b.Index ||
				b.TransactionTimeout != 3*time.Second {
				return fmt.Sprintf("%+v", b)
			}
			return ""
		}},
		{"env wins over file", []string{"--config", conf},
			map[string]string{"WHEELMQ_BROKER_NAME": "from-env", "WHEELMQ_LISTEN": "127.0.0.1:7000"}, func(o options) string {
				b := o.node.Broker
				if b.BrokerName != "from-env" || b.Cluster != "C1" || b.Advertise != "10.1.2.3:7000" {
					return fmt.Sprintf("%+v", b)
				}
				return ""
			}},
		{"flags win over env and file", []string{"--config", conf, "--broker-name", "from-flag", "--flush", "async", "--advertise", "10.9.9.9:1"},
			map[string]string{"WHEELMQ_BROKER_NAME": "from-env"}, func(o options) string {
				b := o.node.Broker
				if b.BrokerName != "from-flag" || b.Flush != writer.FlushAsync || b.Advertise != "10.9.9.9:1" || b.DataDir != "/tmp/file" {
					return fmt.Sprintf("%+v", b)
				}
				return ""
			}},
		{"WHEELMQ_CONFIG", nil, map[string]string{"WHEELMQ_CONFIG": conf}, func(o options) string {
			if o.node.Broker.BrokerName != "from-file" || o.config == nil || o.config.Path != conf {
				return fmt.Sprintf("%+v", o.node.Broker)
			}
			return ""
		}},
		{"YAML", []string{"--config", writeConf(t, "wheelmq.yaml", "broker-name: yaml\nmax-message-size: 2048\nlog-level: debug\n")}, nil,
			func(o options) string {
				if o.node.Broker.BrokerName != "yaml" || o.node.Broker.MaxMessageSize != 2048 || o.logLevel != zerolog.DebugLevel {
					return fmt.Sprintf("%+v", o.node.Broker)
				}
				return ""
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseArgs(c.args, env(c.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if bad := c.check(o); bad != "" {
				t.Fatalf("got %s", bad)
			}
		})
	}
}

// TestConfigFileProblems: bad values name the file and the line, together
// with every other problem.
func TestConfigFileProblems(t *testing.T) {
	conf := writeConf(t, "broker.conf", "brokerName=a b\nflushDiskType=LATER\nmaxMessageSize=x\n")
	_, err := parseArgs([]string{"--config", conf, "--log-level", "loud"}, env(nil), io.Discard)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{conf + ":2: flushDiskType=\"LATER\"", conf + ":3: maxMessageSize", "broker name \"a b\"", "log level"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	yml := writeConf(t, "w.yaml", "max-message-size: lots\n")
	if _, err := parseArgs([]string{"--config", yml}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), yml+":1: max-message-size=\"lots\"") {
		t.Errorf("yaml bad value: %v", err)
	}
	if _, err := parseArgs([]string{"--config", "/nonexistent/broker.conf"}, env(nil), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "/nonexistent/broker.conf") {
		t.Errorf("missing file: %v", err)
	}
}

// TestConfigFileWarnings: each ignored key is logged once, by name.
func TestConfigFileWarnings(t *testing.T) {
	conf := writeConf(t, "broker.conf", "brokerName=a\nstorePathCommitLog=/x\nfileReservedTime=72\nstorePathCommitLog=/y\nbrokerId=0\n"+
		"sendMessageThreadPoolNums=16\n")
	o, err := parseArgs([]string{"--config", conf}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logConfigFile(zerolog.New(&buf), o.config)
	var warned []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Level, Key, Message string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Level == "warn" {
			warned = append(warned, rec.Key)
		}
	}
	if strings.Join(warned, ",") != "storePathCommitLog,sendMessageThreadPoolNums" {
		t.Fatalf("warned about %v, want storePathCommitLog and sendMessageThreadPoolNums once each:\n%s", warned, buf.String())
	}
	if o.node.Broker.Retention != 72*time.Hour {
		t.Fatalf("fileReservedTime=72 gave retention %s", o.node.Broker.Retention)
	}
}

// TestConfigFileUnknownKeys: a mistyped key stops the start, naming the
// key, its line and the key meant, in YAML and in a broker.conf, together
// with the file's other problems.
func TestConfigFileUnknownKeys(t *testing.T) {
	yml := writeConf(t, "wheelmq.yaml", "data: /srv/wheelmq\nflsuh: sync\n")
	_, err := parseArgs([]string{"--config", yml}, env(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), yml+`:2: unknown key "flsuh": not a wheelmq flag; did you mean flush?`) {
		t.Errorf("YAML typo: %v", err)
	}
	conf := writeConf(t, "broker.conf", "brokerName=a\nflushDiskTpye=SYNC_FLUSH\nlistenPort=x\n")
	_, err = parseArgs([]string{"--config", conf}, env(nil), io.Discard)
	for _, want := range []string{conf + `:2: unknown key "flushDiskTpye"`, "did you mean flushDiskType?", conf + ":3: listenPort"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("broker.conf typo: error does not mention %q: %v", want, err)
		}
	}
}

// TestConfigMappingFlagsExist: every broker.conf key maps to a real flag.
func TestConfigMappingFlagsExist(t *testing.T) {
	var usage bytes.Buffer
	if _, err := parseArgs([]string{"-h"}, env(nil), &usage); err != errHelp {
		t.Fatal(err)
	}
	for _, r := range brokerconf.Mapping {
		if r.Flag != "" && !regexp.MustCompile(`(?m)^\s+--`+r.Flag+`(\s|$)`).MatchString(usage.String()) {
			t.Errorf("%s maps to --%s, which wheelmq does not have", r.Key, r.Flag)
		}
	}
}

func TestParseArgsBounds(t *testing.T) {
	o, err := parseArgs(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := o.node.Broker
	if b.PullWorkers != 2 || b.MaxInflightPerConn != 4096 || b.MaxParkedPullsPerConn != 1024 ||
		b.MaxConnOutput != 32<<20 || b.SlowConnTimeout != 30*time.Second {
		t.Fatalf("bounds defaults: %+v", b)
	}
	o, err = parseArgs([]string{"--pull-workers", "3", "--max-conn-requests", "100", "--max-conn-parked-pulls", "10",
		"--slow-conn-timeout", "5s"}, env(map[string]string{"WHEELMQ_MAX_CONN_OUTPUT": "-1"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b = o.node.Broker
	if b.PullWorkers != 3 || b.MaxInflightPerConn != 100 || b.MaxParkedPullsPerConn != 10 ||
		b.MaxConnOutput != -1 || b.SlowConnTimeout != 5*time.Second {
		t.Fatalf("bounds flags: %+v", b)
	}
	_, err = parseArgs([]string{"--pull-workers", "9", "--max-conn-requests", "0", "--max-conn-output", "1024"}, env(nil), io.Discard)
	for _, want := range []string{"pull workers 9", "max unanswered requests per connection 0", "max connection output 1024"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

// TestLogLevelSwitch: the logger passes what zerolog's global level lets
// through, and setLogLevel (UPDATE_BROKER_CONFIG's log-level) moves it.
func TestLogLevelSwitch(t *testing.T) {
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel())
	var buf bytes.Buffer
	log := newLogger(&buf, zerolog.WarnLevel, "json")
	log.Info().Msg("hidden")
	setLogLevel(zerolog.DebugLevel)
	log.Debug().Msg("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "shown") {
		t.Fatalf("log output %q", out)
	}
}

// The ACL flags, their environment variables and broker.conf's aclEnable.
func TestParseArgsACL(t *testing.T) {
	o, err := parseArgs([]string{"--acl-file", "/etc/wheelmq/acl.yml"},
		env(map[string]string{"WHEELMQ_ACCESS_KEY": "broker-a-key", "WHEELMQ_SECRET_KEY": "s3cret-value"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.node.ACL.File != "/etc/wheelmq/acl.yml" || o.node.ACL.IPBypass ||
		o.node.Broker.RegisterCredentials.AccessKey != "broker-a-key" || o.node.Broker.RegisterCredentials.SecretKey != "s3cret-value" {
		t.Fatalf("%+v %+v", o.node.ACL, o.node.Broker.RegisterCredentials)
	}
	if o, err := parseArgs(nil, env(nil), io.Discard); err != nil || o.node.ACL.File != "" || !o.node.Broker.RegisterCredentials.IsZero() {
		t.Fatalf("default: ACL %+v, %v", o.node.ACL, err)
	}
	conf := writeConf(t, "broker.conf", "aclEnable=true\n")
	if o, err := parseArgs([]string{"broker", "--config", conf, "--namesrv", "127.0.0.1:9876"}, env(nil), io.Discard); err != nil ||
		o.node.ACL.File != filepath.Join(filepath.Dir(conf), "plain_acl.yml") {
		t.Fatalf("aclEnable: %+v %v", o.node.ACL, err)
	}
	_, err = parseArgs([]string{"--access-key", "only-key", "--acl-ip-bypass"}, env(nil), io.Discard)
	for _, want := range []string{"--access-key and --secret-key go together", "--acl-ip-bypass needs --acl-file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if _, err := parseArgs([]string{"namesrv", "--access-key", "k", "--secret-key", "s"}, env(nil), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--access-key means nothing in namesrv mode") {
		t.Errorf("namesrv mode with --access-key: %v", err)
	}
	if _, err := parseArgs([]string{"namesrv", "--acl-file", "x.yml"}, env(nil), io.Discard); err != nil {
		t.Errorf("namesrv mode with --acl-file: %v", err)
	}
}

// TestModeHelp: each mode's help lists its own flags and not the others'.
func TestModeHelp(t *testing.T) {
	cases := []struct {
		args      []string
		has, hasn []string
	}{
		{[]string{"--help"}, []string{"Usage:", "broker ", "namesrv ", "--data", "--namesrv-listen", "--flush"}, nil},
		{[]string{"broker", "--help"}, []string{"--namesrv string", "--flush", "--tls-mode"}, []string{"--namesrv-listen", "--order-message-enable"}},
		{[]string{"namesrv", "-h"}, []string{"--listen", "--order-message-enable"}, []string{"--flush", "--broker-name"}},
		{[]string{"help", "namesrv"}, []string{"wheelmq namesrv runs a name server"}, nil},
	}
	for _, c := range cases {
		var out bytes.Buffer
		if _, err := parseArgs(c.args, env(nil), &out); err != errHelp {
			t.Fatalf("%v: %v", c.args, err)
		}
		for _, w := range c.has {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: help lacks %q:\n%s", c.args, w, out.String())
			}
		}
		for _, w := range c.hasn {
			if regexp.MustCompile(regexp.QuoteMeta(w) + `\b`).MatchString(out.String()) {
				t.Errorf("%v: help shows %q of another mode", c.args, w)
			}
		}
	}
}

func TestParseArgsController(t *testing.T) {
	o, err := parseArgs([]string{"namesrv", "--data", "/d", "--controller-listen", "127.0.0.1:9880",
		"--controller-peers", "127.0.0.1:9880;127.0.0.1:9881;127.0.0.1:9882"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := o.node.Controller
	if c.Listen != "127.0.0.1:9880" || len(c.Peers) != 3 || c.Peers[2] != "127.0.0.1:9882" || c.Dir != filepath.Join("/d", "controller") {
		t.Fatalf("controller config %+v", c)
	}
	o, err = parseArgs([]string{"--controller-listen", "127.0.0.1:9880"}, env(nil), io.Discard)
	if err != nil || o.node.Controller.Listen != "127.0.0.1:9880" {
		t.Fatalf("all-in-one: %v %+v", err, o.node.Controller)
	}
	if o, err := parseArgs([]string{"namesrv"}, env(nil), io.Discard); err != nil || o.node.Controller.Listen != "" {
		t.Fatalf("no controller by default: %v %+v", err, o.node.Controller)
	}
	if _, err := parseArgs([]string{"namesrv", "--controller-peers", "a:1"}, env(nil), io.Discard); err == nil {
		t.Fatal("--controller-peers without --controller-listen accepted")
	}
	if _, err := parseArgs([]string{"broker", "--namesrv", "h:1", "--controller-listen", "a:1"}, env(nil), io.Discard); err == nil {
		t.Fatal("--controller-listen accepted in broker mode")
	}
	o, err = parseArgs([]string{"namesrv", "--controller-listen", "10.0.0.1:9880", "--controller-secret-file", "/etc/wheelmq/raft.secret",
		"--controller-insecure"}, env(nil), io.Discard)
	if err != nil || o.node.ControllerSecretFile != "/etc/wheelmq/raft.secret" || !o.node.Controller.Security.Insecure {
		t.Fatalf("controller security flags: %v %q %+v", err, o.node.ControllerSecretFile, o.node.Controller.Security)
	}
	for _, f := range []string{"--controller-secret-file=/s", "--controller-insecure"} {
		if _, err := parseArgs([]string{"namesrv", f}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "needs --controller-listen") {
			t.Fatalf("%s without --controller-listen: %v", f, err)
		}
	}
}

// TestDataIsAFile: --data naming a file is refused plainly, not as the
// TLS certificate that cannot be made inside it.
func TestDataIsAFile(t *testing.T) {
	file := writeConf(t, "not-a-dir", "x")
	_, err := parseArgs([]string{"--data", file}, env(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--data "+file+" is a file, not a directory") || strings.Contains(err.Error(), "tls") {
		t.Fatalf("--data FILE: %v", err)
	}
}
