package brokerconf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var flagNames = map[string]bool{"cluster": true, "broker-name": true, "listen": true, "advertise": true,
	"namesrv": true, "data": true, "flush": true, "auto-create-topic": true, "max-message-size": true,
	"default-topic-queues": true, "index": true, "log-level": true, "transaction-timeout": true,
	"transaction-check-interval": true, "transaction-check-max": true, "auto-create-group": true,
	"retention": true, "retention-at": true, "disk-clean-ratio": true, "disk-full-ratio": true,
	"commitlog-segment-size": true, "acl-file": true, "replication": true, "ha-listen": true, "min-in-sync-replicas": true,
	"topic-message-type-check": true, "mixed-message-type": true, "max-conn-output": true, "max-conn-parked-pulls": true,
	"max-conn-requests": true, "on-corruption": true, "pull-workers": true, "retention-interval": true, "slow-conn-timeout": true,
	"timer-dequeue-workers": true}

// known is flagNames as Load takes them.
var known = func() []string {
	var names []string
	for n := range flagNames {
		names = append(names, n)
	}
	return names
}()

func TestMappingFlagsExist(t *testing.T) {
	for _, r := range Mapping {
		if r.Flag != "" && !flagNames[r.Flag] {
			t.Errorf("%s maps to unknown flag %q", r.Key, r.Flag)
		}
		if (r.Flag == "") == (r.Accept == nil && r.Pending == "") {
			t.Errorf("%s: want exactly one of Flag, Accept, Pending", r.Key)
		}
		if r.Doc == "" {
			t.Errorf("%s: no Doc", r.Key)
		}
	}
}

func TestLoadBrokerConf(t *testing.T) {
	type set = map[string]string // flag -> value
	cases := []struct {
		name     string
		conf     string
		want     set
		ignored  []string // keys, in file order
		problems []string // substrings, one per problem, in order
	}{
		{name: "RocketMQ's 2m-noslave broker-a.properties",
			conf: "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\ndeleteWhen=04\n" +
				"fileReservedTime=48\nbrokerRole=ASYNC_MASTER\nflushDiskType=ASYNC_FLUSH\n",
			want: set{"cluster": "DefaultCluster", "broker-name": "broker-a", "flush": "async",
				"retention-at": "04:00", "retention": "48h"}},
		{name: "retention and disk keys",
			conf: "deleteWhen=04;16\nfileReservedTime=0\ndiskMaxUsedSpaceRatio=80\ndiskSpaceWarningLevelRatio=99\n" +
				"mappedFileSizeCommitLog=4294967296\n",
			want: set{"retention-at": "04:00;16:00", "retention": "0h", "disk-clean-ratio": "0.8", "disk-full-ratio": "0.95",
				"commitlog-segment-size": "4294967296"}},
		{name: "bad retention values",
			conf: "deleteWhen=25\nfileReservedTime=-1\ndiskMaxUsedSpaceRatio=high\n",
			want: set{}, problems: []string{":1: deleteWhen", ":2: fileReservedTime", ":3: diskMaxUsedSpaceRatio"}},
		{name: "every mapped key",
			conf: "listenPort = 10921\nnamesrvAddr = 10.0.0.1:9876;10.0.0.2:9876\nstorePathRootDir: /var/lib/rmq\n" +
				"flushDiskType SYNC_FLUSH\nautoCreateTopicEnable=FALSE\nmaxMessageSize=1048576\n" +
				"defaultTopicQueueNums=4\nmessageIndexEnable=false\nbrokerIP1=192.168.1.5\nbrokerRole=SYNC_MASTER\n" +
				"transactionTimeOut=3000\ntransactionCheckInterval=60000\ntransactionCheckMax=5\n",
			want: set{"listen": "0.0.0.0:10921", "namesrv": "10.0.0.1:9876;10.0.0.2:9876", "data": "/var/lib/rmq",
				"flush": "sync", "auto-create-topic": "false", "max-message-size": "1048576",
				"default-topic-queues": "4", "index": "false", "advertise": "192.168.1.5", "transaction-timeout": "3000ms",
				"transaction-check-interval": "60000ms", "transaction-check-max": "5"}},
		{name: "allow-listed keys warned once each",
			conf: "# a comment\nstorePathCommitLog=/x\nsendMessageThreadPoolNums=16\nstorePathCommitLog=/y\nbrokerName=b\n",
			want: set{"broker-name": "b"}, ignored: []string{"storePathCommitLog", "sendMessageThreadPoolNums"}},
		{name: "unknown keys are errors, with the closest known key",
			conf: "brokerName=b\nflushDiskTpye=SYNC_FLUSH\nbrokername=c\nenableDLegerCommitLog=true\n",
			want: set{"broker-name": "b"},
			problems: []string{":2: unknown key \"flushDiskTpye\": wheelmq neither reads nor ignores it (docs/operations.md lists both); did you mean flushDiskType?",
				":3: unknown key \"brokername\": wheelmq neither reads nor ignores it (docs/operations.md lists both); did you mean brokerName?", ":4: unknown key \"enableDLegerCommitLog\""}},
		{name: "a byte that is not UTF-8 on line 6, reported with the file's other errors",
			conf:     "brokerName=b\nflushDiskType=FAST\n# caf\xe9: a comment's bytes are not read\nbrokerClusterName=c\n\nbrokerIP1=caf\xe9\nlistenPort=70000\nflsuh=1\n",
			want:     set{"broker-name": "b", "cluster": "c"},
			problems: []string{":2: flushDiskType=\"FAST\"", ":6: not UTF-8 text (a byte 0xe9 at column 14)", ":7: listenPort", ":8: unknown key \"flsuh\""}},
		{name: "last value wins",
			conf: "brokerName=a\nbrokerName=b\n", want: set{"broker-name": "b"}},
		{name: "bad values with line numbers",
			conf: "brokerName=a\nflushDiskType=FAST\nlistenPort=70000\nautoCreateTopicEnable=yes\nmaxMessageSize=-1\n" +
				"brokerIP1=host.example\nbrokerId=1\nbrokerRole=SLAVE\nbrokerClusterName=\n",
			want: set{"broker-name": "a"},
			problems: []string{":2: flushDiskType=\"FAST\": want ASYNC_FLUSH or SYNC_FLUSH", ":3: listenPort",
				":4: autoCreateTopicEnable", ":5: maxMessageSize", ":6: brokerIP1", ":7: brokerId=\"1\": wheelmq runs masters only",
				":8: brokerRole", ":9: brokerClusterName=\"\": empty"}},
		{name: "aclEnable reads plain_acl.yml beside the file",
			conf: "aclEnable=true\n", want: set{"acl-file": "<dir>/plain_acl.yml"}},
		{name: "aclEnable false and bad",
			conf: "aclEnable=true\naclEnable=false\naclEnable=maybe\n", want: set{}, problems: []string{":3: aclEnable=\"maybe\": want true or false"}},
		{name: "syntax error keeps what comes before and after",
			conf: "brokerName=a\nbrokerClusterName=\\u00Z1\nflushDiskType=SYNC_FLUSH\n", want: set{"broker-name": "a", "flush": "sync"},
			problems: []string{":2: value of brokerClusterName: malformed \\uXXXX escape"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, "broker.conf", c.conf)
			for k, v := range c.want {
				c.want[k] = strings.ReplaceAll(v, "<dir>", filepath.Dir(path))
			}
			f, err := Load(path, known)
			if err != nil {
				t.Fatal(err)
			}
			got := set{}
			for _, s := range f.Settings {
				got[s.Flag] = s.Value
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("settings %v, want %v", got, c.want)
			}
			var ign []string
			for _, ig := range f.Ignored {
				ign = append(ign, ig.Key)
			}
			if !reflect.DeepEqual(ign, c.ignored) {
				t.Errorf("ignored %v, want %v", ign, c.ignored)
			}
			if len(f.Problems) != len(c.problems) {
				t.Fatalf("problems %q, want %d like %q", f.Problems, len(c.problems), c.problems)
			}
			for i, p := range f.Problems {
				if !strings.HasPrefix(p, path+":") || !strings.Contains(p, c.problems[i]) {
					t.Errorf("problem %q, want it to start with the file name and contain %q", p, c.problems[i])
				}
			}
		})
	}
}

func TestLoadYAML(t *testing.T) {
	path := write(t, "wheelmq.yaml", "# native form\ndata: /srv/wheelmq\nflush: sync\n"+
		"namesrv: [\"10.0.0.1:9876\", \"10.0.0.2:9876\"]\nauto-create-topic: false\nlisten-port: 1\n")
	f, err := Load(path, known)
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{{Flag: "data", Value: "/srv/wheelmq", Key: "data", Line: 2}, {Flag: "flush", Value: "sync", Key: "flush", Line: 3},
		{Flag: "namesrv", Value: "10.0.0.1:9876;10.0.0.2:9876", Key: "namesrv", Line: 4},
		{Flag: "auto-create-topic", Value: "false", Key: "auto-create-topic", Line: 5}}
	if !reflect.DeepEqual(f.Settings, want) || len(f.Problems) != 1 || f.Problems[0] != path+`:6: unknown key "listen-port": not a wheelmq flag` {
		t.Fatalf("settings %+v problems %q", f.Settings, f.Problems)
	}
	bad := write(t, "bad.yml", "data:\n  nested: 1\n")
	if f, err := Load(bad, known); err != nil || len(f.Problems) != 1 || !strings.Contains(f.Problems[0], bad+":2:") {
		t.Fatalf("nested value: %v %v", f, err)
	}
	if _, err := Load(write(t, "x.toml", "a=1"), known); err == nil || !strings.Contains(err.Error(), "TOML") {
		t.Fatalf("toml: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.conf"), known); err == nil {
		t.Fatal("missing file accepted")
	}
}

// TestLoadYAMLProblems: every problem of a YAML file, each on its own
// line, all at once.
func TestLoadYAMLProblems(t *testing.T) {
	cases := []struct {
		name, text string
		problems   []string // ":line: what", in order
	}{
		{"a typo, with the flag meant", "data: /srv\nflsuh: sync\n",
			[]string{`:2: unknown key "flsuh": not a wheelmq flag; did you mean flush?`}},
		{"every unknown key and bad value at once", "flsuh: sync\ndata: [a, {b: c}]\nbrokerName: x\nconfig: other.yaml\nflush: async\nflush: sync\n",
			[]string{`:1: unknown key "flsuh"`, ":2: data: a list may hold only plain values", `:3: unknown key "brokerName": not a wheelmq flag; did you mean broker-name?`,
				":4: config: a configuration file cannot name another one", ":6: flush is given twice (first on line 5)"}},
		{"an unclosed list on line 3", "data: /srv\nflush: sync\nnamesrv: [a\nbroker-name: b\n",
			[]string{":3: did not find expected ',' or ']'"}},
		{"an unclosed quote on line 3", "data: /srv\nflush: sync\nnamesrv: \"a\nbroker-name: b\n", []string{":3: "}},
		{"a tab on line 3", "data: /srv\nflush: sync\n\tnamesrv: a\nbroker-name: b\n", []string{":3: "}},
		{"a bad indent on line 3", "data: /srv\nflush: sync\n  namesrv: a\nbroker-name: b\n", []string{":3: "}},
		{"a key without a value on line 3", "data: /srv\nflush: sync\nnamesrv\nbroker-name: b\n", []string{":3: "}},
		{"a multi-line list before the error", "namesrv: [a,\n  b]\nflush: sync\nnamesrv: [c\n", []string{":4: "}},
		{"bytes that are not UTF-8, every line", "data: caf\xe9\nflush: sync\n# \xff\n", []string{":1: not UTF-8 text (a byte 0xe9 at column 10)", ":3: not UTF-8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, "wheelmq.yaml", c.text)
			f, err := Load(path, known)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Problems) != len(c.problems) {
				t.Fatalf("problems %q, want %d like %q", f.Problems, len(c.problems), c.problems)
			}
			for i, p := range f.Problems {
				if !strings.HasPrefix(p, path+c.problems[i]) {
					t.Errorf("problem %q, want it to start with %q", p, path+c.problems[i])
				}
			}
		})
	}
}

// TestLoadBrokerConfigOutput: what GET_BROKER_CONFIG answers (mqadmin
// getBrokerConfig, exportConfigs) reads back as a broker.conf with no
// problem: RocketMQ's keys mapped or ignored on purpose, wheelmq's own by
// their flag names.
func TestLoadBrokerConfigOutput(t *testing.T) {
	f, err := Load("../../../actors/broker/testdata/broker_config_default.properties", known)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Problems) != 0 {
		t.Fatalf("problems: %q", f.Problems)
	}
	got := map[string]string{}
	for _, s := range f.Settings {
		got[s.Flag] = s.Value
	}
	for flag, want := range map[string]string{"max-conn-requests": "4096", "log-level": "info", "mixed-message-type": "false",
		"topic-message-type-check": "false", "retention": "72h", "disk-clean-ratio": "0.75"} {
		if got[flag] != want {
			t.Errorf("--%s = %q, want %q", flag, got[flag], want)
		}
	}
}
