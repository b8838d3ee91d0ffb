// Package aclfile is the stage that owns the ACL file (a RocketMQ
// plain_acl.yml, netloop/auth's ParsePlainACL): it is read once before
// the ports open (Load: a bad file stops the start with its errors), then
// watched, and every good version is published through a View that the
// ports' Guards read on every request, from their event loops, without a
// lock or a message.
//
// # Reload
//
// Every Interval (default 1 s) the stage stats the file and compares its
// size, modification and change times and inode with the version in
// force: a rewrite in place and a replace by rename (editors, config
// tools, Kubernetes ConfigMaps) both show. A changed file is read and
// parsed; when it is good and its content differs, it becomes the new
// version (wheelmq_acl_config_version counts up) and the change is
// logged with its account count. A bad file keeps the last good version
// in force: the stage logs why (every error with its line) once per
// change of the file, counts it (wheelmq_acl_load_errors_total) and sets
// wheelmq_acl_config_stale to 1 until a good file is read. A missing
// file is treated the same way (a rename in two steps may leave it
// missing for a moment). The file is read only on the stage's goroutine.
//
// # Reloads that would lock the cluster out
//
// Besides a file that does not parse, a reload is refused, the last good
// version staying in force, when the new file
//
//   - has no accounts and does not say noAccounts: true (an empty or
//     truncated file; access.ErrNoAccounts), at start as well;
//   - drops an account the process signs its own traffic with
//     (Options.Keep: the broker's --access-key towards name servers and
//     controllers), or changes its secret, while the version in force has
//     it with that secret;
//   - has no admin account while the version in force has one (brokers
//     register and heartbeat to name servers and controllers as admins);
//     noAccounts: true is the explicit way to refuse everyone.
//
// To rotate the process's own key: add the new account, restart the
// process with it, then remove the old account.
//
// Metrics:
//
//	wheelmq_acl_config_version              the version in force (1 at start, +1 per reload that changed it)
//	wheelmq_acl_accounts                    accounts of the version in force
//	wheelmq_acl_load_errors_total           reloads refused (bad or missing file)
//	wheelmq_acl_config_stale                1 while the file on disk is not the version in force
//	wheelmq_acl_last_reload_timestamp_seconds when the version in force was read
package aclfile

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/stage"
)

// StageName is the stage's stable name.
const StageName = "aclfile"

// DefaultInterval is how often the file is looked at.
const DefaultInterval = time.Second

// MaxFileSize bounds the file (a plain_acl.yml of thousands of accounts is
// well under it).
const MaxFileSize = 16 << 20

// Snapshot is one good version of the file; immutable.
type Snapshot struct {
	ACL *access.PlainACL
	// Version counts the versions read since the process started (1 is
	// the one read at start).
	Version uint64
	// Path is the file, ReadAt when this version was read.
	Path   string
	ReadAt time.Time
	key    fileKey
	sum    [sha256.Size]byte
}

// fileKey identifies a version of the file on disk.
type fileKey struct {
	size, mtime, ctime int64
	dev, ino           uint64
}

// View publishes the version in force; safe from any goroutine. It is the
// access.Source of the ports' Guards.
type View struct{ p atomic.Pointer[Snapshot] }

var _ access.Source = (*View)(nil)

// Load returns the version in force (nil before Init).
func (v *View) Load() *Snapshot { return v.p.Load() }

// Current implements access.Source.
func (v *View) Current() (access.Directory, uint64) {
	s := v.p.Load()
	if s == nil {
		return (*access.PlainACL)(nil), 0
	}
	return s.ACL, s.Version
}

// Init publishes the version read at start, before the stage runs.
func (v *View) Init(s *Snapshot) { v.p.Store(s) }

// Load reads and parses the file: the version to start with. Its error
// names the file and, for a bad one, every problem with its line.
func Load(path string) (*Snapshot, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("ACL file: %w", err)
	}
	return read(path, fi, 1)
}

// read reads the file described by fi.
func read(path string, fi os.FileInfo, version uint64) (*Snapshot, error) {
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("ACL file %s: not a regular file", path)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("ACL file %s: %d bytes, more than %d", path, fi.Size(), MaxFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ACL file: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("ACL file %s: more than %d bytes", path, MaxFileSize)
	}
	acl, err := access.ParsePlainACL(data, path)
	if err != nil {
		return nil, fmt.Errorf("ACL file %s is not valid:\n%w", path, err)
	}
	return &Snapshot{ACL: acl, Version: version, Path: path, ReadAt: time.Now(), key: statKey(fi), sum: sha256.Sum256(data)}, nil
}

// Metrics are the stage's instruments, made once per process (a restart
// of the stage keeps them).
type Metrics struct {
	version, accounts, stale, readAt prometheus.Gauge
	errors                           prometheus.Counter
}

// NewMetrics registers the instruments with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &Metrics{
		version:  g("wheelmq_acl_config_version", "Version of the ACL file in force: 1 at start, +1 for each reload that changed it."),
		accounts: g("wheelmq_acl_accounts", "Accounts of the ACL file in force."),
		stale:    g("wheelmq_acl_config_stale", "1 while the ACL file on disk is bad or missing and the last good version stays in force."),
		readAt:   g("wheelmq_acl_last_reload_timestamp_seconds", "When the ACL file in force was read (Unix time)."),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "wheelmq_acl_load_errors_total",
			Help: "Reloads of the ACL file refused (bad or missing file; the last good version stays in force)."}),
	}
	if reg != nil {
		reg.MustRegister(m.version, m.accounts, m.stale, m.readAt, m.errors)
	}
	return m
}

func (m *Metrics) published(s *Snapshot) {
	m.version.Set(float64(s.Version))
	m.accounts.Set(float64(s.ACL.Len()))
	m.readAt.Set(float64(s.ReadAt.UnixNano()) / 1e9)
	m.stale.Set(0)
}

// Options configure the stage.
type Options struct {
	// Path is the file; View holds the version in force (Init'ed with
	// Load's before the stage is spawned).
	Path string
	View *View
	// Interval between two looks at the file (default DefaultInterval).
	Interval time.Duration
	// Keep are the credentials the process signs its own traffic with: a
	// reload that drops one of them (or changes its secret) while the
	// version in force has it is refused.
	Keep    []access.Credentials
	Metrics *Metrics
	Logger  zerolog.Logger
}

// tick is the poll timer's message.
type tick struct{}

// watcher is the actor.
type watcher struct {
	opts  Options
	timer *stage.Timer
	// bad is the file version last refused (logged once per change).
	bad    fileKey
	badSet bool
}

// Producer returns the stage's producer.
func Producer(opts Options) stage.Producer {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	return func(self *stage.Stage) actor.Actor { return &watcher{opts: opts, timer: self.NewTimer()} }
}

// Receive implements actor.Actor.
func (w *watcher) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if s := w.opts.View.Load(); s != nil {
			w.opts.Metrics.published(s)
		}
		w.timer.Arm(w.opts.Interval, tick{})
	case tick:
		w.poll()
		w.timer.Arm(w.opts.Interval, tick{})
	case *actor.Stopping, *actor.Restarting:
		w.timer.Stop()
	}
}

// poll reloads the file when it changed.
func (w *watcher) poll() {
	cur := w.opts.View.Load()
	fi, err := os.Stat(w.opts.Path)
	if err != nil {
		w.refuse(fileKey{}, fmt.Errorf("ACL file: %w", err))
		return
	}
	key := statKey(fi)
	if cur != nil && key == cur.key {
		w.badSet = false
		w.opts.Metrics.stale.Set(0)
		return
	}
	if w.badSet && key == w.bad {
		return // refused already
	}
	var ver uint64 = 1
	if cur != nil {
		ver = cur.Version + 1
	}
	next, err := read(w.opts.Path, fi, ver)
	if err == nil && cur != nil {
		err = lockout(cur.ACL, next.ACL, w.opts.Keep)
	}
	if err != nil {
		w.refuse(key, err)
		return
	}
	w.badSet = false
	if cur != nil && bytes.Equal(next.sum[:], cur.sum[:]) {
		// Touched or rewritten with the same content: the same version.
		same := *cur
		same.key = key
		w.opts.View.p.Store(&same)
		w.opts.Metrics.stale.Set(0)
		return
	}
	// The gauges first: whoever sees the new version in the view sees it
	// in the metrics too.
	w.opts.Metrics.published(next)
	w.opts.View.p.Store(next)
	ev := w.opts.Logger.Info().Str("path", w.opts.Path).Uint64("version", next.Version).Int("accounts", next.ACL.Len())
	ev.Msg("ACL file reloaded")
	for _, warn := range next.ACL.Warnings {
		w.opts.Logger.Warn().Str("path", w.opts.Path).Str("warning", warn).Msg("ACL file")
	}
}

// refuse keeps the version in force over a bad or missing file, and
// says so once per change of the file.
func (w *watcher) refuse(key fileKey, err error) {
	w.opts.Metrics.stale.Set(1)
	if w.badSet && key == w.bad {
		return
	}
	w.bad, w.badSet = key, true
	w.opts.Metrics.errors.Inc()
	ev := w.opts.Logger.Error().Err(err).Str("path", w.opts.Path)
	if cur := w.opts.View.Load(); cur != nil {
		ev = ev.Uint64("version_in_force", cur.Version).Time("read_at", cur.ReadAt)
	}
	ev.Msg("ACL file not reloaded: the last good version stays in force")
}

// lockout refuses a new version that would shut out the cluster's own
// traffic which the version in force lets in (see the package doc).
func lockout(cur, next *access.PlainACL, keep []access.Credentials) error {
	for _, c := range keep {
		if c.IsZero() || next.Len() == 0 || !holds(cur, c) || holds(next, c) {
			continue
		}
		return fmt.Errorf("ACL file: the new version drops account %s or changes its secret, which this process signs its own requests with (add the new account, restart with it, then remove the old one)", c.AccessKey)
	}
	if next.Len() > 0 && cur.Admins() > 0 && next.Admins() == 0 {
		return fmt.Errorf("ACL file: the new version has no admin account (the version in force has %d): brokers register and heartbeat as admins; noAccounts: true refuses everyone explicitly", cur.Admins())
	}
	return nil
}

// holds reports whether acl has c's account with c's secret.
func holds(acl *access.PlainACL, c access.Credentials) bool {
	a, ok := acl.Lookup(c.AccessKey)
	return ok && a.SecretKey() == c.SecretKey
}
