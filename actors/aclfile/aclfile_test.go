package aclfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
)

func account(ak string, topics ...string) string {
	return "  - accessKey: " + ak + "\n    secretKey: secret-" + ak + "\n    topicPerms: [" + strings.Join(topics, ", ") + "]\n"
}

func file(accounts ...string) string { return "accounts:\n" + strings.Join(accounts, "") }

// syncBuffer is a log sink safe for the stage's goroutine and the test.
type syncBuffer struct {
	ch chan string
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.ch <- string(p)
	return len(p), nil
}

type rig struct {
	t    *testing.T
	path string
	view *View
	m    *Metrics
	logs *syncBuffer
}

func startWatcher(t *testing.T, content string) *rig {
	t.Helper()
	return startWatcherKeep(t, content, nil)
}

// replace writes content to path as a config tool does, aside and renamed
// into place, so that the watcher never reads it half-written: a test that
// expects one refusal's log line must not see the empty file an in-place
// write passes through (TestReloadInPlaceAndByRename covers in-place).
func replace(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startWatcherKeep starts the stage with Options.Keep.
func startWatcherKeep(t *testing.T, content string, keep []access.Credentials) *rig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, path: path, view: &View{}, m: NewMetrics(nil), logs: &syncBuffer{ch: make(chan string, 100)}}
	r.view.Init(snap)
	sys := stage.NewSystem(zerolog.Nop())
	reg := stage.NewRegistry(prometheus.NewRegistry())
	st, err := reg.Spawn(sys, supervisor.New(supervisor.Policy{}), StageName, Producer(Options{
		Path: path, View: r.view, Interval: 20 * time.Millisecond, Metrics: r.m, Logger: zerolog.New(r.logs), Keep: keep,
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Stop(); sys.Shutdown() })
	return r
}

// waitVersion waits (at most 5 s) for the version in force to reach v.
func (r *rig) waitVersion(v uint64) *Snapshot {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s := r.view.Load(); s.Version >= v {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.t.Fatalf("version %d not reached (at %d)", v, r.view.Load().Version)
	return nil
}

// waitLog waits for a log line holding want.
func (r *rig) waitLog(want string) string {
	r.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case line := <-r.logs.ch:
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout:
			r.t.Fatalf("no log line with %q", want)
		}
	}
}

func gauge(g prometheus.Gauge) float64 {
	ch := make(chan prometheus.Metric, 1)
	g.Collect(ch)
	var out dtoMetric
	_ = (<-ch).Write(&out.m)
	return out.m.GetGauge().GetValue()
}

func TestReloadInPlaceAndByRename(t *testing.T) {
	r := startWatcher(t, file(account("alice-app", "orders=SUB")))
	if _, ok := r.view.Load().ACL.Lookup("bob-app00"); ok {
		t.Fatal("bob before any reload")
	}
	// Rewritten in place.
	if err := os.WriteFile(r.path, []byte(file(account("alice-app", "orders=SUB"), account("bob-app00"))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := r.waitVersion(2)
	if _, ok := s.ACL.Lookup("bob-app00"); !ok {
		t.Fatal("bob not loaded")
	}
	r.waitLog("ACL file reloaded")
	// Replaced by a rename, same size as before: the inode changed.
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(file(account("alice-app", "orders=PUB"), account("bob-app00"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		t.Fatal(err)
	}
	s = r.waitVersion(3)
	a, _ := s.ACL.Lookup("alice-app")
	if ok, _ := a.Allows(topicNeed("orders"), anyIP); !ok {
		t.Fatal("the renamed file's permission is not in force")
	}
	if got := gauge(r.m.version); got != 3 {
		t.Fatalf("version gauge %v", got)
	}
}

func TestBadFileKeepsLastGood(t *testing.T) {
	r := startWatcher(t, file(account("alice-app")))
	replace(t, r.path, file(account("alice-app"))+"  - accessKey: x\n    bogus: 1\n")
	line := r.waitLog("not reloaded")
	if !strings.Contains(line, "plain_acl.yml:6") || !strings.Contains(line, `unknown key \"bogus\"`) || !strings.Contains(line, `"version_in_force":1`) {
		t.Fatalf("log line %s", line)
	}
	if s := r.view.Load(); s.Version != 1 || s.ACL.Len() != 1 {
		t.Fatalf("snapshot changed: %+v", s)
	}
	if gauge(r.m.stale) != 1 {
		t.Fatal("not stale")
	}
	// Logged once per change of the file, not once per poll.
	time.Sleep(100 * time.Millisecond)
	select {
	case l := <-r.logs.ch:
		t.Fatalf("logged again: %s", l)
	default:
	}
	// Missing for a moment, then good again.
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitLog("no such file")
	if err := os.WriteFile(r.path, []byte(file(account("alice-app"), account("carol-app"))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := r.waitVersion(2)
	if s.ACL.Len() != 2 || gauge(r.m.stale) != 0 {
		t.Fatalf("after the fix: %d accounts, stale %v", s.ACL.Len(), gauge(r.m.stale))
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "none.yml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing: %v", err)
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("accounts:\n  - accessKey: short\n    secretKey: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bad)
	if err == nil || !strings.Contains(err.Error(), "bad.yml:2: account short: accessKey must be") ||
		!strings.Contains(err.Error(), "secretKey must be") {
		t.Fatalf("bad: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
}
