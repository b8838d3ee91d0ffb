package broker

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

// TestBrokerKeysAllowList pins the keys UPDATE_BROKER_CONFIG may change: a
// new one is a decision to take here, and none names a file, a directory
// or a credential.
func TestBrokerKeysAllowList(t *testing.T) {
	want := []string{
		"autoCreateSubscriptionGroup", "autoCreateTopicEnable", "deleteWhen", "diskMaxUsedSpaceRatio",
		"diskSpaceCleanForciblyRatio", "diskSpaceWarningLevelRatio", "enableMixedMessageType", "enableTopicMessageTypeCheck", "fileReservedTime", "log-level",
		"max-conn-parked-pulls", "max-conn-requests", "maxMessageSize", "transactionCheckInterval",
		"transactionCheckMax", "transactionTimeOut",
	}
	var got []string
	seen := map[string]bool{}
	for _, k := range brokerKeys {
		if seen[k.name] {
			t.Errorf("key %s listed twice", k.name)
		}
		seen[k.name] = true
		if secretLike(k.name) {
			t.Errorf("key %s looks like a credential", k.name)
		}
		if k.set != nil {
			got = append(got, k.name)
			if pathLike(k.name) {
				t.Errorf("changeable key %s names a path", k.name)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("changeable keys %q\nwant %q", got, want)
	}
	for _, k := range []string{"storePathRootDir", "storePathCommitLog", "brokerConfigPath", "rocketmqHome",
		"kvConfigPath", "aclFile", "configStorePath", "filterServerScript", "rocketmq.home.dir", "store_path"} {
		if !pathLike(k) {
			t.Errorf("pathLike(%s) = false", k)
		}
	}
	for _, k := range []string{"accessKey", "secretKey", "authenticationToken", "mqttPassword"} {
		if !secretLike(k) {
			t.Errorf("secretLike(%s) = false", k)
		}
	}
	for _, k := range []string{"fileReservedTime", "diskMaxUsedSpaceRatio", "autoCreateSubscriptionGroup", "log-level"} {
		if pathLike(k) {
			t.Errorf("pathLike(%s) = true", k)
		}
	}
}

// testView is a broker's configuration view without a running broker.
func testView(cfg *pipeline.Config) *configView {
	adv := netip.MustParseAddrPort("192.0.2.7:10911")
	return &configView{cfg: cfg, advertise: adv, live: &pipeline.Settings{
		MaxMessageSize: cfg.MaxMessageSize, AutoCreateTopic: true, AutoCreateGroup: true,
		MaxInflightPerConn: 4096, MaxParkedPullsPerConn: 1024, Retention: 72 * time.Hour, RetentionAt: "04:00",
		DiskCleanRatio: 0.75, DiskForceCleanRatio: 0.85, DiskFullRatio: 0.9,
		TransactionTimeout: 6 * time.Second, TransactionCheckInterval: time.Minute, TransactionCheckMax: 15,
		LogLevel: zerolog.InfoLevel,
	}}
}

// TestBrokerConfigGolden pins GET_BROKER_CONFIG's body for the default
// configuration (testdata/broker_config_default.properties; -rewrite).
func TestBrokerConfigGolden(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	cfg.DataDir = "/var/lib/wheelmq"
	cfg.NameServers = []string{"192.0.2.1:9876", "192.0.2.2:9876"}
	v := testView(&cfg)
	b := Detached(&cfg, v.advertise)
	body := javaprops.Encode(b.config(v.live).Values())
	path := filepath.Join("testdata", "broker_config_default.properties")
	if *rewrite {
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -rewrite creates it)", err)
	}
	if string(body) != string(want) {
		t.Fatalf("%s differs (go test -rewrite to update)\n--- got\n%s\n--- want\n%s", path, body, want)
	}
	entries, err := javaprops.Parse(body)
	if err != nil || len(entries) != len(brokerKeys) {
		t.Fatalf("the body reads back as %d entries (%v), want %d", len(entries), err, len(brokerKeys))
	}
}

func TestBrokerKeyValues(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	cfg.SetLogLevel = func(zerolog.Level) {}
	v := testView(&cfg)
	for _, c := range []struct {
		key, value string
		check      func(*pipeline.Settings) bool
		err        string // part of the error; "" for none
	}{
		{"maxMessageSize", "1048576", func(s *pipeline.Settings) bool { return s.MaxMessageSize == 1<<20 }, ""},
		{"maxMessageSize", "0", nil, "want bytes in 1.."},
		{"maxMessageSize", "999999999", nil, "want bytes in 1.."},
		{"autoCreateTopicEnable", "FALSE", func(s *pipeline.Settings) bool { return !s.AutoCreateTopic }, ""},
		{"autoCreateSubscriptionGroup", "yes", nil, "want true or false"},
		{"fileReservedTime", "48", func(s *pipeline.Settings) bool { return s.Retention == 48*time.Hour }, ""},
		{"fileReservedTime", "0", func(s *pipeline.Settings) bool { return s.Retention == 0 }, ""},
		{"fileReservedTime", "-1", nil, "hours"},
		{"fileReservedTime", "1.5", nil, "hours"},
		{"deleteWhen", "04;12", func(s *pipeline.Settings) bool { return s.RetentionAt == "04:00;12:00" }, ""},
		{"deleteWhen", "3", func(s *pipeline.Settings) bool { return s.RetentionAt == "03:00" }, ""},
		{"deleteWhen", "04:30;any", nil, "want hours of day"},
		{"deleteWhen", "any", func(s *pipeline.Settings) bool { return s.RetentionAt == "any" }, ""},
		{"deleteWhen", "24", nil, "want hours of day"},
		{"diskMaxUsedSpaceRatio", "60", func(s *pipeline.Settings) bool { return s.DiskCleanRatio == 0.6 }, ""},
		{"diskSpaceWarningLevelRatio", "96", nil, "10..95"},
		{"diskSpaceCleanForciblyRatio", "9", nil, "10..95"},
		{"transactionTimeOut", "3000", func(s *pipeline.Settings) bool { return s.TransactionTimeout == 3*time.Second }, ""},
		{"transactionCheckInterval", "0", nil, "positive number of milliseconds"},
		{"transactionCheckMax", "3", func(s *pipeline.Settings) bool { return s.TransactionCheckMax == 3 }, ""},
		{"max-conn-requests", "100", func(s *pipeline.Settings) bool { return s.MaxInflightPerConn == 100 }, ""},
		{"max-conn-parked-pulls", "0", nil, "long polls in 1.."},
		{"log-level", "DEBUG", func(s *pipeline.Settings) bool { return s.LogLevel == zerolog.DebugLevel }, ""},
		{"log-level", "fatal", nil, "want trace, debug"},
		{"log-level", "", nil, "want trace, debug"},
	} {
		a, err := brokerKeyIndex[c.key].set(v, c.value)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s=%q: error %v, want one containing %q", c.key, c.value, err, c.err)
			}
		case err != nil:
			t.Errorf("%s=%q: %v", c.key, c.value, err)
		default:
			s := *v.live
			a(&s)
			if !c.check(&s) {
				t.Errorf("%s=%q: settings %+v", c.key, c.value, s)
			}
		}
	}
	cfg.SetLogLevel = nil
	if _, err := brokerKeyIndex["log-level"].set(v, "debug"); err == nil || !strings.Contains(err.Error(), "fixed") {
		t.Errorf("log-level without SetLogLevel: %v", err)
	}
}

func TestBrokerKeyShow(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{deleteWhen("04:00"), "04"},
		{deleteWhen("04:00;12:00"), "04;12"},
		{deleteWhen("04:30;12:00"), "04:30;12:00"},
		{deleteWhen("any"), "any"},
		{percent(0.75), "75"},
		{percent(0.57), "57"},
		{percent(0.755), "75.5"},
		{millis(6 * time.Second), "6000"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	cfg := pipeline.DefaultConfig()
	v := testView(&cfg)
	v.live.Retention = 90 * time.Minute
	if got := brokerKeyIndex["fileReservedTime"].show(v); got != "1.5" {
		t.Errorf("fileReservedTime of 90m shows %q", got)
	}
	cfg.Listen = "0.0.0.0:0"
	if got := v.listenPort(); got != "10911" {
		t.Errorf("listenPort with a picked port shows %q, want the advertised one", got)
	}
}

// FuzzBrokerKeySet feeds any value to every changeable key: set never
// panics, and a value it accepts, shown and set again, gives the same
// settings (what GET_BROKER_CONFIG lists is what UPDATE_BROKER_CONFIG
// takes back).
func FuzzBrokerKeySet(f *testing.F) {
	for _, v := range []string{"0", "1", "48", "1024", "04;12", "4", "04:30", "any", "true", "FALSE", "57", "3000",
		"debug", "-1", "", " 1", "1e3", "99999999999999999999"} {
		f.Add(v)
	}
	cfg := pipeline.DefaultConfig()
	cfg.SetLogLevel = func(zerolog.Level) {}
	f.Fuzz(func(t *testing.T, value string) {
		for _, k := range brokerKeys {
			if k.set == nil {
				continue
			}
			v := testView(&cfg)
			a, err := k.set(v, value)
			if err != nil {
				continue
			}
			once := *v.live
			a(&once)
			shown := k.show(&configView{cfg: &cfg, live: &once, advertise: v.advertise})
			b, err := k.set(v, shown)
			if err != nil {
				t.Fatalf("%s=%q accepted, shown as %q, refused: %v", k.name, value, shown, err)
			}
			twice := *v.live
			b(&twice)
			if !reflect.DeepEqual(twice, once) {
				t.Fatalf("%s=%q: %+v, shown as %q: %+v", k.name, value, once, shown, twice)
			}
		}
	})
}
