package process

// The web console's Backend (cmd/internal/console): what the console shows
// comes from the broker's own admin requests over its own port, signed
// with the logged-in account's credentials (so the broker's ACL decides
// each one exactly as for wheelctl), from the metrics registry that
// /metrics serves, and from the timer wheel's slot counts. No store is
// read here.

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// consoleBackend implements console.Backend for a Node.
type consoleBackend struct {
	n *Node
	// role is the broker's replication role once replication holds one
	// (nil: standalone). SetRole wires it.
	role   atomic.Pointer[role.Holder]
	late   lateWindow
	counts countCache // the broker's timer counts, kept a moment (console_timers.go)
}

// lateWindow keeps a reading of the lateness histogram so that the timer
// page shows the lateness of the last deliveries, not of all since the
// start: the difference from a reading 1 to 2 minutes old.
type lateWindow struct {
	mu       sync.Mutex
	old, mid *dto.Histogram // guarded by mu
	oldAt    time.Time      // guarded by mu
	midAt    time.Time      // guarded by mu
}

// lateSpan is the least age of the reading subtracted.
const lateSpan = time.Minute

// recent returns the deliveries of h since the older kept reading (all of
// h while there is none, or when none came since) and what they cover.
func (w *lateWindow) recent(h *dto.Histogram, now time.Time) (*dto.Histogram, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.mid == nil:
		w.mid, w.midAt = h, now
	case now.Sub(w.midAt) >= lateSpan:
		w.old, w.oldAt, w.mid, w.midAt = w.mid, w.midAt, h, now
	}
	if w.old == nil || h.GetSampleCount() <= w.old.GetSampleCount() || len(h.GetBucket()) != len(w.old.GetBucket()) {
		return h, "since the start"
	}
	d := &dto.Histogram{SampleCount: proto64(h.GetSampleCount() - w.old.GetSampleCount())}
	for i, b := range h.GetBucket() {
		c := b.GetCumulativeCount() - w.old.GetBucket()[i].GetCumulativeCount()
		d.Bucket = append(d.Bucket, &dto.Bucket{UpperBound: b.UpperBound, CumulativeCount: &c})
	}
	return d, "of the last " + now.Sub(w.oldAt).Round(time.Second).String()
}

func proto64(v uint64) *uint64 { return &v }

var _ console.Backend = (*consoleBackend)(nil)

// SetConsoleRole lets the console show the broker's role, epoch and
// sync-state set (replication's Holder; nil: standalone).
func (n *Node) SetConsoleRole(h *role.Holder) {
	if n.console != nil {
		n.console.role.Store(h)
	}
}

func (cb *consoleBackend) ACL() bool { return cb.n.guard != nil }

// Authenticate looks the access key up in the ports' directory (the ACL
// file's accounts and the broker's ACL 2.0 users) and compares the secret
// in constant time. Read needs admin or SUB by default on topics.
func (cb *consoleBackend) Authenticate(_ context.Context, c console.Credentials) (console.Identity, error) {
	g := cb.n.guard
	if g == nil {
		return console.Identity{Name: "anonymous", Admin: true, Read: true}, nil
	}
	acct, ok := g.Lookup(c.AccessKey)
	if !ok || c.SecretKey == "" || subtle.ConstantTimeCompare([]byte(acct.SecretKey()), []byte(c.SecretKey)) != 1 {
		return console.Identity{}, console.ErrBadLogin
	}
	id := console.Identity{Name: acct.Name(), Admin: acct.IsAdmin()}
	lo := netip.MustParseAddr("127.0.0.1")
	sub, _ := acct.Allows(auth.TopicNeed("%CONSOLE%", auth.PermSub), lo)
	id.Read = id.Admin || sub
	return id, nil
}

// session is an admin session signed with c (unsigned without ACL) over
// the broker's own port.
func (cb *consoleBackend) session(c console.Credentials) *admin.Session {
	s := &admin.Session{Timeout: 5 * time.Second}
	if cb.n.guard != nil {
		s.Options.Sign = auth.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}.Signer()
	}
	if cb.n.tls != nil && cb.n.cfg.TLS.Mode == netloop.TLSEnforcing {
		s.Options.TLS = cb.n.tls.ClientConfig()
	}
	return s
}

func (cb *consoleBackend) addr() (string, error) {
	if cb.n.broker == nil {
		return "", fmt.Errorf("this process runs no broker")
	}
	return cb.n.broker.Advertise(), nil
}

// families gathers the registry by metric name.
func (cb *consoleBackend) families() (map[string]*dto.MetricFamily, error) {
	fams, err := cb.n.registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	m := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		m[f.GetName()] = f
	}
	return m, nil
}

// value is a gauge's or counter's value (summed over its series).
func value(m map[string]*dto.MetricFamily, name string) float64 {
	f := m[name]
	if f == nil {
		return 0
	}
	var v float64
	for _, s := range f.GetMetric() {
		switch {
		case s.Gauge != nil:
			v += s.Gauge.GetValue()
		case s.Counter != nil:
			v += s.Counter.GetValue()
		case s.Untyped != nil:
			v += s.Untyped.GetValue()
		}
	}
	return v
}

func labelOf(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func (cb *consoleBackend) Overview(ctx context.Context) (console.Overview, error) {
	n := cb.n
	m, err := cb.families()
	if err != nil {
		return console.Overview{}, err
	}
	o := console.Overview{Version: buildVersion(), Role: admin.Role(map[string]string{}, 0), Healthy: true,
		DiskUsed: value(m, "wheelmq_store_disk_used_ratio"), CommitLogBytes: value(m, "wheelmq_store_commitlog_bytes"),
		TimersPending: value(m, "wheelmq_timer_pending"), Connections: value(m, "wheelmq_net_connections")}
	for _, d := range n.stages.Down() {
		o.Healthy = false
		o.Down = append(o.Down, d.Error())
	}
	if b := n.broker; b != nil {
		p := b.pipe
		o.BrokerName, o.Cluster, o.Addr, o.Started = b.cfg.BrokerName, b.cfg.Cluster, b.Advertise(), p.Booted()
		o.MsgsIn, o.MsgsOut = float64(p.Counters().PutMessages()), float64(p.Counters().GotMessages())
		o.DiskWarn, o.DiskFull = b.cfg.DiskForceCleanRatio, b.cfg.DiskFullRatio
	}
	if h := cb.role.Load(); h != nil {
		st := h.Get()
		o.Role = admin.Role(map[string]string{"haRole": st.Kind.String(), "haFenced": strconv.FormatBool(st.Fenced)}, 0)
		o.Epoch = st.Epoch
	}
	cb.pendingWithoutPop(ctx, &o)
	return o, nil
}

// buildVersion is the binary's module version and VCS revision, and the
// RocketMQ version it answers as.
func buildVersion() string {
	v := "wheelmq"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v += " " + bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
	}
	return v + ", speaking RocketMQ V5_3_3"
}

// Stages reads the stage metrics from the registry: the same numbers
// /metrics shows.
func (cb *consoleBackend) Stages(context.Context) ([]console.Stage, error) {
	m, err := cb.families()
	if err != nil {
		return nil, err
	}
	by := map[string]*console.Stage{}
	get := func(s *dto.Metric) *console.Stage {
		name := labelOf(s, "stage")
		st := by[name]
		if st == nil {
			st = &console.Stage{Name: name, Up: true, ReadAt: time.Now()}
			by[name] = st
		}
		return st
	}
	each := func(name string, f func(*console.Stage, *dto.Metric)) {
		if fam := m[name]; fam != nil {
			for _, s := range fam.GetMetric() {
				f(get(s), s)
			}
		}
	}
	each("wheelmq_actor_mailbox_depth", func(st *console.Stage, s *dto.Metric) { st.Depth = s.GetGauge().GetValue() })
	each("wheelmq_actor_messages_total", func(st *console.Stage, s *dto.Metric) { st.Messages = s.GetCounter().GetValue() })
	each("wheelmq_actor_restarts_total", func(st *console.Stage, s *dto.Metric) { st.Restarts = s.GetCounter().GetValue() })
	each("wheelmq_stage_up", func(st *console.Stage, s *dto.Metric) { st.Up = s.GetGauge().GetValue() == 1 })
	each("wheelmq_actor_process_seconds", func(st *console.Stage, s *dto.Metric) {
		h := s.GetHistogram()
		st.Seconds = h.GetSampleSum()
		st.P99 = quantile(h, 0.99)
	})
	out := make([]console.Stage, 0, len(by))
	for _, st := range by {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// quantile estimates q of a Prometheus histogram (the upper bound of the
// bucket holding it; NaN when empty, which the pages show as "-").
func quantile(h *dto.Histogram, q float64) float64 {
	total := h.GetSampleCount()
	if total == 0 {
		return math.NaN()
	}
	rank := uint64(q * float64(total))
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() >= max(rank, 1) {
			return b.GetUpperBound()
		}
	}
	return h.GetBucket()[len(h.GetBucket())-1].GetUpperBound()
}

// maxBound is the upper bound of the highest non-empty bucket (NaN: none).
func maxBound(h *dto.Histogram) float64 {
	var prev uint64
	hi := math.NaN()
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() > prev {
			hi = b.GetUpperBound()
		}
		prev = b.GetCumulativeCount()
	}
	return hi
}

// Timers is the wheel's histogram (PendingHistogram, the slot counts)
// plus the timer metrics.
func (cb *consoleBackend) Timers(ctx context.Context, edges []int64) (console.Timers, error) {
	var t console.Timers
	if cb.n.broker == nil {
		return t, fmt.Errorf("this process runs no broker")
	}
	w := cb.n.broker.pipe.Wheel()
	now := time.Now().UnixMilli()
	t.Counts = w.PendingHistogram(now, edges)
	t.Pending = w.Stats().Pending
	t.DueNextMinute = w.DueWithin(now, time.Minute.Milliseconds())
	t.Furthest = furthest(w.PendingHistogram(now, yearDays()), now)
	cb.withoutPop(ctx, &t, now, edges)
	m, err := cb.families()
	if err != nil {
		return t, err
	}
	if f := m["wheelmq_timer_lateness_seconds"]; f != nil && len(f.GetMetric()) > 0 {
		h, over := cb.late.recent(f.GetMetric()[0].GetHistogram(), time.Now())
		t.LatenessP50, t.LatenessP99, t.LatenessMax, t.LatenessOver = quantile(h, 0.5), quantile(h, 0.99), maxBound(h), over
	}
	t.Delivered, t.Cancelled = value(m, "wheelmq_timer_delivered_total"), value(m, "wheelmq_timer_cancelled_total")
	t.PopDeadlines = value(m, "wheelmq_timer_pop_deadlines_total")
	return t, nil
}

// yearDays are day edges over a year (ms).
func yearDays() []int64 {
	e := make([]int64, 366)
	for i := range e {
		e[i] = int64(i+1) * 24 * time.Hour.Milliseconds()
	}
	return e
}

// furthest are the five furthest non-empty days of a by-day histogram.
func furthest(counts []int64, now int64) []console.Delay {
	var out []console.Delay
	for i := len(counts) - 1; i >= 0 && len(out) < 5; i-- {
		if counts[i] == 0 {
			continue
		}
		from := now
		if i > 0 {
			from += int64(i) * 24 * time.Hour.Milliseconds()
		}
		out = append(out, console.Delay{At: time.UnixMilli(from), Count: counts[i]})
	}
	return out
}

func (cb *consoleBackend) Cluster(ctx context.Context, c console.Credentials) (console.Cluster, error) {
	var cl console.Cluster
	if cb.n.broker != nil {
		cl.NameServers = cb.n.broker.cfg.NameServers
	} else if a := cb.n.NamesrvAddr(); a != "" {
		cl.NameServers = []string{a}
	}
	s := cb.session(c)
	defer s.Close()
	var errs []error
	for _, ns := range cl.NameServers { // the first that answers speaks for all
		bs, err := s.Brokers(ctx, ns)
		if err != nil {
			errs = append(errs, fmt.Errorf("brokers of %s: %w", ns, err))
			continue
		}
		for _, b := range bs {
			cl.Brokers = append(cl.Brokers, cb.brokerRow(ctx, s, b))
		}
		return cl, nil
	}
	return cl, errors.Join(errs...)
}

// brokerRow is one broker of the cluster page: its version from its
// runtime info, and for this broker its role, epoch and sync-state set.
func (cb *consoleBackend) brokerRow(ctx context.Context, s *admin.Session, b admin.Broker) console.Broker {
	// One role everywhere: admin.Role over the broker's runtime info, as
	// wheelctl cluster list and the Overview name it.
	row := console.Broker{Cluster: b.Cluster, Name: b.Name, Addr: b.Addr, ID: b.ID, Role: admin.Role(nil, b.ID)}
	if info, err := s.RuntimeInfo(ctx, b.Addr); err != nil {
		row.Error = err.Error()
	} else {
		row.Version, row.Role = info["brokerVersionDesc"], admin.Role(info, b.ID)
	}
	if cb.n.broker != nil && b.Addr == cb.n.broker.Advertise() {
		if h := cb.role.Load(); h != nil {
			st := h.Get()
			row.Role = admin.Role(map[string]string{"haRole": st.Kind.String(), "haFenced": strconv.FormatBool(st.Fenced)}, b.ID)
			row.Epoch = st.Epoch
			for _, id := range st.SyncStateSet {
				row.SyncSet = append(row.SyncSet, strconv.FormatInt(id, 10))
			}
		}
	}
	return row
}
