package broker

// The keys of the broker's configuration (Config and UpdateConfig,
// config.go; GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG).
//
// A setting RocketMQ also has goes by RocketMQ's key (BrokerConfig,
// NettyServerConfig, MessageStoreConfig; the names broker.conf maps, see
// cmd/internal/brokerconf) in RocketMQ's unit; a setting only wheelmq has
// goes by its wheelmq flag name in the flag's syntax (no RocketMQ key
// holds a '-'). Only keys with set change at run time; none of them names
// a file, a directory or a credential (TestBrokerKeysAllowList).

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// The connection limits a connection gets when the configuration leaves
// them 0: netloop's DefaultMaxOutput and DefaultStallTimeout, which the
// event loops apply (actors/ does not import netloop; a router test keeps
// the two equal).
const (
	DefaultMaxConnOutput   = 32 << 20
	DefaultSlowConnTimeout = 30 * time.Second
)

// brokerKey is one key of the broker's configuration.
type brokerKey struct {
	name string
	// show returns the value in force.
	show func(v *configView) string
	// set parses a new value and returns how it changes the settings;
	// nil: the key is fixed while the broker runs.
	set func(v *configView, value string) (apply, error)
}

// apply changes a copy of the settings.
type apply func(*pipeline.Settings)

// configView is what the keys' values come from.
type configView struct {
	cfg       *pipeline.Config
	live      *pipeline.Settings
	advertise netip.AddrPort // the broker's advertised address
}

// brokerKeys are the keys Config answers with (GET_BROKER_CONFIG).
var brokerKeys = []brokerKey{
	// Fixed for the broker's life.
	{name: "brokerClusterName", show: func(v *configView) string { return v.cfg.Cluster }},
	{name: "brokerName", show: func(v *configView) string { return v.cfg.BrokerName }},
	{name: "brokerId", show: func(*configView) string { return "0" }},              // masters only
	{name: "brokerRole", show: func(*configView) string { return "ASYNC_MASTER" }}, // no replication
	{name: "brokerIP1", show: func(v *configView) string { return v.advertise.Addr().String() }},
	{name: "listenPort", show: (*configView).listenPort},
	{name: "namesrvAddr", show: func(v *configView) string { return strings.Join(v.cfg.NameServers, ";") }},
	{name: "storePathRootDir", show: func(v *configView) string { return v.cfg.DataDir }},
	{name: "flushDiskType", show: func(v *configView) string { return strings.ToUpper(v.cfg.Flush.String()) + "_FLUSH" }},
	{name: "defaultTopicQueueNums", show: func(v *configView) string { return strconv.Itoa(int(v.cfg.DefaultQueueNums)) }},
	{name: "messageIndexEnable", show: func(v *configView) string { return strconv.FormatBool(v.cfg.Index) }},
	{name: "mappedFileSizeCommitLog", show: func(v *configView) string {
		return strconv.FormatInt(orDefault(v.cfg.SegmentSize, commitlog.DefaultSegmentSize), 10) // an existing store's must match
	}},
	{name: "timerWheelEnable", show: func(v *configView) string { return strconv.FormatBool(v.cfg.TimerEnabled) }},
	{name: "timerMaxDelaySec", show: func(v *configView) string { return strconv.FormatInt(int64(v.cfg.MaxTimerDelay/time.Second), 10) }},
	{name: "flushConsumerOffsetInterval", show: func(v *configView) string { return millis(orDefault(v.cfg.OffsetFlushInterval, 5*time.Second)) }},
	{name: "registerNameServerPeriod", show: func(v *configView) string { return millis(v.cfg.RegisterInterval) }},
	{name: "pull-workers", show: func(v *configView) string { return strconv.Itoa(v.cfg.PullWorkers) }},
	{name: "timer-dequeue-workers", show: func(v *configView) string { return strconv.Itoa(v.cfg.TimerDequeueWorkers) }},
	{name: "on-corruption", show: func(v *configView) string { return v.cfg.OnCorruption.String() }},
	{name: "max-conn-output", show: func(v *configView) string {
		return strconv.FormatInt(orDefault(v.cfg.MaxConnOutput, DefaultMaxConnOutput), 10)
	}},
	{name: "slow-conn-timeout", show: func(v *configView) string {
		return orDefault(v.cfg.SlowConnTimeout, DefaultSlowConnTimeout).String()
	}},
	{name: "retention-interval", show: func(v *configView) string { return orDefault(v.cfg.RetentionInterval, 10*time.Second).String() }},

	// Changeable while the broker runs (pipeline.Settings).
	{name: "maxMessageSize", show: func(v *configView) string { return strconv.Itoa(v.live.MaxMessageSize) },
		set: func(v *configView, val string) (apply, error) {
			n, err := intIn(val, 1, v.cfg.MaxMessageSizeLimit(), "bytes")
			if err != nil {
				err = fmt.Errorf("%w (the frame size this broker started with; for more, raise --max-message-size and restart)", err)
			}
			return func(s *pipeline.Settings) { s.MaxMessageSize = n }, err
		}},
	{name: "autoCreateTopicEnable", show: func(v *configView) string { return strconv.FormatBool(v.live.AutoCreateTopic) },
		set: func(_ *configView, val string) (apply, error) {
			b, err := boolean(val)
			return func(s *pipeline.Settings) { s.AutoCreateTopic = b }, err
		}},
	{name: "autoCreateSubscriptionGroup", show: func(v *configView) string { return strconv.FormatBool(v.live.AutoCreateGroup) },
		set: func(_ *configView, val string) (apply, error) {
			b, err := boolean(val)
			return func(s *pipeline.Settings) { s.AutoCreateGroup = b }, err
		}},
	{name: "enableTopicMessageTypeCheck", show: func(v *configView) string { return strconv.FormatBool(v.live.TopicMessageTypeCheck) },
		set: func(_ *configView, val string) (apply, error) {
			b, err := boolean(val)
			return func(s *pipeline.Settings) { s.TopicMessageTypeCheck = b }, err
		}},
	{name: "enableMixedMessageType", show: func(v *configView) string { return strconv.FormatBool(v.live.MixedMessageType) },
		set: func(_ *configView, val string) (apply, error) {
			b, err := boolean(val)
			return func(s *pipeline.Settings) { s.MixedMessageType = b }, err
		}},
	{name: "fileReservedTime", show: func(v *configView) string { return strconv.FormatFloat(v.live.Retention.Hours(), 'f', -1, 64) },
		set: func(_ *configView, val string) (apply, error) {
			h, err := intIn(val, 0, 1<<20, "hours (0: no limit by age)")
			return func(s *pipeline.Settings) { s.Retention = time.Duration(h) * time.Hour }, err
		}},
	{name: "deleteWhen", show: func(v *configView) string { return deleteWhen(v.live.RetentionAt) },
		set: func(_ *configView, val string) (apply, error) {
			at, err := parseDeleteWhen(val)
			return func(s *pipeline.Settings) { s.RetentionAt = at }, err
		}},
	{name: "diskMaxUsedSpaceRatio", show: func(v *configView) string { return percent(v.live.DiskCleanRatio) },
		set: func(_ *configView, val string) (apply, error) {
			f, err := ratio(val)
			return func(s *pipeline.Settings) { s.DiskCleanRatio = f }, err
		}},
	{name: "diskSpaceCleanForciblyRatio", show: func(v *configView) string { return percent(v.live.DiskForceCleanRatio) },
		set: func(_ *configView, val string) (apply, error) {
			f, err := ratio(val)
			return func(s *pipeline.Settings) { s.DiskForceCleanRatio = f }, err
		}},
	{name: "diskSpaceWarningLevelRatio", show: func(v *configView) string { return percent(v.live.DiskFullRatio) },
		set: func(_ *configView, val string) (apply, error) {
			f, err := ratio(val)
			return func(s *pipeline.Settings) { s.DiskFullRatio = f }, err
		}},
	{name: "transactionTimeOut", show: func(v *configView) string { return millis(v.live.TransactionTimeout) },
		set: func(_ *configView, val string) (apply, error) {
			d, err := positiveMillis(val)
			return func(s *pipeline.Settings) { s.TransactionTimeout = d }, err
		}},
	{name: "transactionCheckInterval", show: func(v *configView) string { return millis(v.live.TransactionCheckInterval) },
		set: func(_ *configView, val string) (apply, error) {
			d, err := positiveMillis(val)
			return func(s *pipeline.Settings) { s.TransactionCheckInterval = d }, err
		}},
	{name: "transactionCheckMax", show: func(v *configView) string { return strconv.Itoa(v.live.TransactionCheckMax) },
		set: func(_ *configView, val string) (apply, error) {
			n, err := intIn(val, 1, math.MaxInt32, "checks")
			return func(s *pipeline.Settings) { s.TransactionCheckMax = n }, err
		}},
	{name: "max-conn-requests", show: func(v *configView) string { return strconv.FormatInt(v.live.MaxInflightPerConn, 10) },
		set: func(_ *configView, val string) (apply, error) {
			n, err := intIn(val, 1, math.MaxInt32, "requests")
			return func(s *pipeline.Settings) { s.MaxInflightPerConn = int64(n) }, err
		}},
	{name: "max-conn-parked-pulls", show: func(v *configView) string { return strconv.Itoa(v.live.MaxParkedPullsPerConn) },
		set: func(_ *configView, val string) (apply, error) {
			n, err := intIn(val, 1, math.MaxInt32, "long polls")
			return func(s *pipeline.Settings) { s.MaxParkedPullsPerConn = n }, err
		}},
	{name: "log-level", show: func(v *configView) string { return v.live.LogLevel.String() },
		set: func(v *configView, val string) (apply, error) {
			if v.cfg.SetLogLevel == nil {
				return nil, fmt.Errorf("fixed by this broker's process")
			}
			l, err := zerolog.ParseLevel(strings.ToLower(val))
			if err != nil || l < zerolog.TraceLevel || l > zerolog.ErrorLevel || val == "" {
				return nil, fmt.Errorf("want trace, debug, info, warn or error")
			}
			return func(s *pipeline.Settings) { s.LogLevel = l }, nil
		}},
}

// brokerKeyIndex finds a key by name.
var brokerKeyIndex = func() map[string]*brokerKey {
	m := make(map[string]*brokerKey, len(brokerKeys))
	for i := range brokerKeys {
		m[brokerKeys[i].name] = &brokerKeys[i]
	}
	return m
}()

// secretLike reports a key that names a credential: never shown, never
// accepted (wheelmq has none today; the filter stays for what comes).
func secretLike(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"secret", "password", "passwd", "accesskey", "token", "credential", "privatekey"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// pathLike reports a key that names a file or a directory (storePath*,
// brokerConfigPath, rocketmqHome, aclFile, ...): changing one through the
// protocol is how CVE-2023-33246 and CVE-2023-37582 ran code on RocketMQ
// brokers. It looks at the key's words (camelCase, or separated by '-',
// '.' or '_'), so that autoCreateSubscriptionGroup is no script.
func pathLike(key string) bool {
	words := keyWords(key)
	for _, w := range words {
		switch w {
		case "path", "paths", "dir", "dirs", "directory", "home", "script", "command", "cmd":
			return true
		}
	}
	return len(words) > 0 && words[len(words)-1] == "file"
}

// keyWords splits a key into lower-case words.
func keyWords(key string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range key {
		switch {
		case r == '-' || r == '.' || r == '_':
			flush()
		case r >= 'A' && r <= 'Z':
			flush()
			cur.WriteRune(r + ('a' - 'A'))
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return words
}

// listenPort is the port of the listen address, or the advertised one
// when the broker was asked to pick a port.
func (v *configView) listenPort() string {
	if _, p, err := net.SplitHostPort(v.cfg.Listen); err == nil && p != "0" {
		return p
	}
	return strconv.Itoa(int(v.advertise.Port()))
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// percent renders a ratio in RocketMQ's percent (0.75 -> "75").
func percent(r float64) string { return strconv.FormatFloat(math.Round(r*1e4)/1e2, 'f', -1, 64) }

// deleteWhen renders --retention-at as RocketMQ's hours of day ("04:00;12:00"
// -> "04;12") when every time is on the hour, else as it is ("04:30", "any").
func deleteWhen(at string) string {
	parts := strings.Split(at, ";")
	for i, p := range parts {
		h, ok := strings.CutSuffix(strings.TrimSpace(p), ":00")
		if !ok {
			return at
		}
		parts[i] = h
	}
	return strings.Join(parts, ";")
}

// parseDeleteWhen reads RocketMQ's hours of day ("04;12") or wheelmq's
// --retention-at syntax ("04:30;12:00", "any") and returns the latter in
// its canonical form.
func parseDeleteWhen(v string) (string, error) {
	parts := strings.Split(v, ";")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if h, err := strconv.Atoi(p); err == nil && h >= 0 && h <= 23 && len(p) <= 2 {
			parts[i] = fmt.Sprintf("%02d:00", h)
		}
	}
	sched, err := retention.ParseSchedule(strings.Join(parts, ";"))
	if err != nil {
		return "", fmt.Errorf("want hours of day 0..23 separated by ';' (04;12), local times HH:MM, or any")
	}
	return sched.String(), nil // canonical: "04:00;12:00", "any"
}

// boolean is stricter than Java's Boolean.parseBoolean, which reads a typo
// as false.
func boolean(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("want true or false")
}

func intIn(v string, lo, hi int, unit string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want %s in %d..%d", unit, lo, hi)
	}
	return n, nil
}

// ratio reads a RocketMQ disk ratio in percent; unlike a broker.conf
// (clamped to 10..95, as MessageStoreConfig clamps), a value outside is
// refused.
func ratio(v string) (float64, error) {
	n, err := intIn(v, 10, 95, "a percentage")
	return float64(n) / 100, err
}

func positiveMillis(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > 1<<40 {
		return 0, fmt.Errorf("want a positive number of milliseconds")
	}
	return time.Duration(n) * time.Millisecond, nil
}
