package brokerconf

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/cmd/internal/suggest"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// Rule maps one broker.conf key to a wheelmq flag.
type Rule struct {
	// Key is RocketMQ's name (BrokerConfig, NettyServerConfig or
	// MessageStoreConfig field).
	Key string
	// Flag is the wheelmq flag it sets; empty when the key is accepted
	// without a flag (Accept) or ignored (Pending).
	Flag string
	// Convert turns the file's value into the flag's; nil keeps it.
	Convert func(string) (string, error)
	// Accept checks a key that has no flag because wheelmq always behaves
	// as the value asks (brokerId=0); it errs for values wheelmq cannot
	// honour.
	Accept func(string) error
	// Beside, when set, is a file name: the value is true or false, and
	// true sets Flag to that file in the configuration file's directory
	// (aclEnable=true reads plain_acl.yml next to broker.conf, as RocketMQ
	// reads conf/plain_acl.yml); false sets nothing.
	Beside string
	// Pending, when set, says why the key is ignored for now although
	// wheelmq will have a meaning for it.
	Pending string
	// Doc describes the conversion (docs/operations.md's table).
	Doc string
}

// Mapping is the broker.conf keys wheelmq reads, in documentation order.
// The keys of Ignore are ignored with a warning; any other key is an error.
var Mapping = []Rule{
	{Key: "brokerClusterName", Flag: "cluster", Convert: nonEmpty, Doc: "as is"},
	{Key: "brokerName", Flag: "broker-name", Convert: nonEmpty, Doc: "as is"},
	{Key: "listenPort", Flag: "listen", Convert: listenPort, Doc: "`0.0.0.0:<port>`"},
	{Key: "brokerIP1", Flag: "advertise", Convert: ip, Doc: "`<brokerIP1>:<port of --listen>` (an `--advertise` flag or `WHEELMQ_ADVERTISE` wins)"},
	{Key: "namesrvAddr", Flag: "namesrv", Convert: nonEmpty, Doc: "as is (`;`-separated)"},
	{Key: "storePathRootDir", Flag: "data", Convert: nonEmpty, Doc: "as is"},
	{Key: "flushDiskType", Flag: "flush", Convert: flushType, Doc: "`ASYNC_FLUSH` → `async`, `SYNC_FLUSH` → `sync`"},
	{Key: "autoCreateTopicEnable", Flag: "auto-create-topic", Convert: boolean, Doc: "`true`/`false`"},
	{Key: "autoCreateSubscriptionGroup", Flag: "auto-create-group", Convert: boolean, Doc: "`true`/`false`"},
	{Key: "maxMessageSize", Flag: "max-message-size", Convert: positive, Doc: "bytes"},
	{Key: "defaultTopicQueueNums", Flag: "default-topic-queues", Convert: positive, Doc: "queues of topics created through TBW102"},
	{Key: "messageIndexEnable", Flag: "index", Convert: boolean, Doc: "`true`/`false`"},
	{Key: "transactionTimeOut", Flag: "transaction-timeout", Convert: millis, Doc: "milliseconds → a duration"},
	{Key: "transactionCheckInterval", Flag: "transaction-check-interval", Convert: millis, Doc: "milliseconds → a duration"},
	{Key: "transactionCheckMax", Flag: "transaction-check-max", Convert: positive, Doc: "checks"},
	{Key: "brokerId", Accept: masterID, Doc: "must be `0`: wheelmq runs masters only"},
	{Key: "brokerRole", Accept: masterRole, Doc: "`ASYNC_MASTER` or `SYNC_MASTER` (no replication either way); `SLAVE` is refused"},
	{Key: "fileReservedTime", Flag: "retention", Convert: hours, Doc: "hours → a duration"},
	{Key: "deleteWhen", Flag: "retention-at", Convert: deleteWhen, Doc: "hours of day, `;`-separated (`04;12` → `04:00;12:00`)"},
	{Key: "diskMaxUsedSpaceRatio", Flag: "disk-clean-ratio", Convert: percent, Doc: "percent (clamped to 10..95 as RocketMQ does) → a fraction"},
	{Key: "diskSpaceWarningLevelRatio", Flag: "disk-full-ratio", Convert: percent, Doc: "percent (clamped to 10..95) → a fraction"},
	{Key: "mappedFileSizeCommitLog", Flag: "commitlog-segment-size", Convert: positive64, Doc: "bytes (must match an existing data directory)"},
	{Key: "enableControllerMode", Flag: "replication", Convert: controllerMode,
		Doc: "`true` → `controller`, `false` → `none`"},
	{Key: "haListenPort", Flag: "ha-listen", Convert: listenPort, Doc: "`0.0.0.0:<port>`"},
	{Key: "minInSyncReplicas", Flag: "min-in-sync-replicas", Convert: positive, Doc: "members of the sync-state set, master included"},
	{Key: "enableTopicMessageTypeCheck", Flag: "topic-message-type-check", Convert: boolean, Doc: "`true`/`false`"},
	{Key: "enableMixedMessageType", Flag: "mixed-message-type", Convert: boolean, Doc: "`true`/`false`"},
	{Key: "aclEnable", Flag: "acl-file", Beside: "plain_acl.yml",
		Doc: "`true` → `--acl-file <directory of the broker.conf>/plain_acl.yml`; `false`: no ACL"},
}

// controllerMode converts enableControllerMode.
func controllerMode(v string) (string, error) {
	b, err := boolean(v)
	if err != nil {
		return "", err
	}
	if b == "true" {
		return "controller", nil
	}
	return "none", nil
}

// rule returns the rule of a broker.conf key.
func rule(key string) (Rule, bool) {
	for _, r := range Mapping {
		if r.Key == key {
			return r, true
		}
	}
	return Rule{}, false
}

// knownKeys are the broker.conf keys Mapping reads or Ignore ignores.
func knownKeys() []string {
	keys := make([]string, 0, len(Mapping)+len(Ignore))
	for _, r := range Mapping {
		keys = append(keys, r.Key)
	}
	for _, k := range Ignore {
		keys = append(keys, k.Key)
	}
	return keys
}

// Setting is one flag value read from a file.
type Setting struct {
	// Flag is the wheelmq flag name; Value is in the flag's syntax.
	Flag, Value string
	// Key is the key as written in the file, Line where it is.
	Key  string
	Line int
	// HostOnly marks brokerIP1: Value is a host that takes the port of
	// the listen address in force once the flags are known.
	HostOnly bool
}

// Ignored is a key of the file that sets nothing.
type Ignored struct {
	Key    string
	Line   int
	Reason string
}

// File is a configuration file read by Load.
type File struct {
	// Path is the file as given.
	Path string
	// Settings are the flag values, in file order; for a key given twice
	// only the last one is kept, as java.util.Properties does.
	Settings []Setting
	// Ignored are the keys that set nothing, one per key.
	Ignored []Ignored
	// Problems are the bad keys and values, each as "path:line: what", in
	// line order.
	Problems []string
	// lines are the line numbers of Problems.
	lines []int
}

// problem records a bad line.
func (f *File) problem(line int, format string, args ...any) {
	f.Problems = append(f.Problems, fmt.Sprintf("%s:%d: %s", f.Path, line, fmt.Sprintf(format, args...)))
	f.lines = append(f.lines, line)
}

// sortProblems puts Problems in line order (a stable sort: one line's
// problems keep theirs).
func (f *File) sortProblems() {
	idx := make([]int, len(f.Problems))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return f.lines[idx[a]] < f.lines[idx[b]] })
	probs, lines := make([]string, len(idx)), make([]int, len(idx))
	for i, j := range idx {
		probs[i], lines[i] = f.Problems[j], f.lines[j]
	}
	f.Problems, f.lines = probs, lines
}

// Problem formats an error met while applying s (a value the flag refused)
// with the file and line it came from.
func (f *File) Problem(s Setting, err error) string {
	return fmt.Sprintf("%s:%d: %s=%q: %v", f.Path, s.Line, s.Key, s.Value, err)
}

// add keeps one setting per flag: the last one.
func (f *File) add(s Setting) {
	for i := range f.Settings {
		if f.Settings[i].Flag == s.Flag {
			f.Settings = append(f.Settings[:i], f.Settings[i+1:]...)
			break
		}
	}
	f.Settings = append(f.Settings, s)
}

// drop forgets the setting of a flag.
func (f *File) drop(flag string) {
	for i := range f.Settings {
		if f.Settings[i].Flag == flag {
			f.Settings = append(f.Settings[:i], f.Settings[i+1:]...)
			return
		}
	}
}

// ignore records an ignored key once.
func (f *File) ignore(key string, line int, reason string) {
	for _, ig := range f.Ignored {
		if ig.Key == key {
			return
		}
	}
	f.Ignored = append(f.Ignored, Ignored{Key: key, Line: line, Reason: reason})
}

// mapBrokerConf applies Mapping to the entries of a broker.conf. A key
// that is one of flags (wheelmq's own settings, as GET_BROKER_CONFIG lists
// them: max-conn-requests=4096) sets that flag.
func (f *File) mapBrokerConf(entries []javaprops.Entry, flags []string) {
	for _, e := range entries {
		r, ok := rule(e.Key)
		switch {
		case !ok && e.Key != "config" && slices.Contains(flags, e.Key):
			f.add(Setting{Flag: e.Key, Value: strings.TrimSpace(e.Value), Key: e.Key, Line: e.Line})
			continue
		case !ok:
			if ig, ok := ignored(e.Key); ok {
				f.ignore(e.Key, e.Line, ig.Reason)
			} else {
				f.problem(e.Line, "unknown key %q: wheelmq neither reads nor ignores it (docs/operations.md lists both)%s",
					e.Key, suggest.DidYouMean(e.Key, knownKeys(), ""))
			}
			continue
		case r.Pending != "":
			f.ignore(e.Key, e.Line, r.Pending)
			continue
		}
		v := strings.TrimSpace(e.Value)
		if r.Accept != nil {
			if err := r.Accept(v); err != nil {
				f.problem(e.Line, "%s=%q: %v", e.Key, e.Value, err)
			}
			continue
		}
		if r.Beside != "" {
			on, err := boolean(v)
			if err != nil {
				f.problem(e.Line, "%s=%q: %v", e.Key, e.Value, err)
				continue
			}
			if on == "false" {
				f.drop(r.Flag) // the last value wins, as in java.util.Properties
				continue
			}
			v = filepath.Join(filepath.Dir(f.Path), r.Beside)
		}
		if r.Convert != nil {
			conv, err := r.Convert(v)
			if err != nil {
				f.problem(e.Line, "%s=%q: %v", e.Key, e.Value, err)
				continue
			}
			v = conv
		}
		f.add(Setting{Flag: r.Flag, Value: v, Key: e.Key, Line: e.Line, HostOnly: r.Key == "brokerIP1"})
	}
}

func nonEmpty(v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("empty")
	}
	return v, nil
}

func listenPort(v string) (string, error) {
	p, err := strconv.ParseUint(v, 10, 16)
	if err != nil {
		return "", fmt.Errorf("want a port number 0..65535")
	}
	return "0.0.0.0:" + strconv.FormatUint(p, 10), nil
}

func ip(v string) (string, error) {
	a, err := netip.ParseAddr(v)
	if err != nil {
		return "", fmt.Errorf("want an IP address: %w", err)
	}
	return a.String(), nil
}

func flushType(v string) (string, error) {
	switch v {
	case "ASYNC_FLUSH":
		return "async", nil
	case "SYNC_FLUSH":
		return "sync", nil
	}
	return "", fmt.Errorf("want ASYNC_FLUSH or SYNC_FLUSH")
}

// boolean is stricter than Java's Boolean.parseBoolean (anything but
// "true" is false there): a typo is reported instead of read as false.
func boolean(v string) (string, error) {
	switch strings.ToLower(v) {
	case "true":
		return "true", nil
	case "false":
		return "false", nil
	}
	return "", fmt.Errorf("want true or false")
}

func positive(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return "", fmt.Errorf("want a positive integer")
	}
	return strconv.FormatInt(n, 10), nil
}

// positive64 is positive for byte sizes beyond 2 GiB.
func positive64(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return "", fmt.Errorf("want a positive integer")
	}
	return strconv.FormatInt(n, 10), nil
}

// hours turns RocketMQ's fileReservedTime (hours) into a Go duration.
func hours(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 || n > 1<<20 {
		return "", fmt.Errorf("want a number of hours >= 0")
	}
	return strconv.FormatInt(n, 10) + "h", nil
}

// deleteWhen turns RocketMQ's ";"-separated hours of day into the local
// times of --retention-at (each opens an hour, as deleteWhen does).
func deleteWhen(v string) (string, error) {
	var out []string
	for _, part := range strings.Split(v, ";") {
		h, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || h < 0 || h > 23 {
			return "", fmt.Errorf("want hours of day 0..23 separated by ';'")
		}
		out = append(out, fmt.Sprintf("%02d:00", h))
	}
	return strings.Join(out, ";"), nil
}

// percent turns a RocketMQ disk ratio in percent into a fraction, clamped
// to 10..95 as MessageStoreConfig clamps diskMaxUsedSpaceRatio.
func percent(v string) (string, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return "", fmt.Errorf("want a percentage")
	}
	n = min(max(n, 10), 95)
	return strconv.FormatFloat(float64(n)/100, 'f', -1, 64), nil
}

// millis turns RocketMQ's milliseconds into a Go duration.
func millis(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > 1<<40 {
		return "", fmt.Errorf("want a positive number of milliseconds")
	}
	return strconv.FormatInt(n, 10) + "ms", nil
}

func masterID(v string) error {
	if v != "0" {
		return fmt.Errorf("wheelmq runs masters only (brokerId=0); it has no slave mode")
	}
	return nil
}

func masterRole(v string) error {
	switch v {
	case "ASYNC_MASTER", "SYNC_MASTER":
		return nil
	}
	return fmt.Errorf("want ASYNC_MASTER or SYNC_MASTER: wheelmq has no slave mode")
}
