package main

import (
	"io"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/writer"
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
		o.node.MetricsListen != "127.0.0.1:9108" || !o.node.RunBroker || b.Flush != writer.FlushAsync || !b.AutoCreateTopic || !b.AutoCreateGroup {
		t.Fatalf("unexpected defaults: %+v", o.node)
	}
}

func TestParseArgsEnvAndFlags(t *testing.T) {
	o, err := parseArgs([]string{"--flush", "sync", "--listen", "127.0.0.1:1", "--auto-create-group=false"},
		env(map[string]string{"WHEELMQ_DATA": "/tmp/x", "WHEELMQ_LISTEN": "127.0.0.1:2", "WHEELMQ_AUTO_CREATE_TOPIC": "false",
			"WHEELMQ_AUTO_CREATE_GROUP": "true"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := o.node.Broker
	if b.DataDir != "/tmp/x" || b.Listen != "127.0.0.1:1" || b.Flush != writer.FlushSync || b.AutoCreateTopic ||
		b.AutoCreateGroup {
		t.Fatalf("env/flags not applied (flag must win over env): %+v", b)
	}
}

func TestParseArgsReportsEveryProblem(t *testing.T) {
	_, err := parseArgs([]string{"--flush", "sometimes", "--listen", "nope", "--log-level", "loud"},
		env(map[string]string{"WHEELMQ_AUTO_CREATE_TOPIC": "maybe"}), io.Discard)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"flush mode", "listen address", "log level", "WHEELMQ_AUTO_CREATE_TOPIC"} {
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
		{[]string{"namesrv", "--data", "/tmp/x"}, "--data means nothing in namesrv mode"},
		{[]string{"namesrv", "--flush", "sync"}, "--flush means nothing in namesrv mode"},
		{[]string{"broker", "--namesrv", "127.0.0.1:9876", "--namesrv-listen", "0.0.0.0:9876"}, "--namesrv-listen means nothing in broker mode"},
	}
	for _, c := range cases {
		_, err := parseArgs(c.args, env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to say %q", c.args, err, c.want)
		}
	}
	// The environment may carry settings for other modes: not an error.
	if _, err := parseArgs([]string{"namesrv"}, env(map[string]string{"WHEELMQ_DATA": "/tmp/x"}), io.Discard); err != nil {
		t.Fatalf("WHEELMQ_DATA in namesrv mode: %v", err)
	}
}
