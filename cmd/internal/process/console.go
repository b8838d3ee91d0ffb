package process

// The web console's Backend (cmd/internal/console): what the console shows
// comes from the in-process broker API (actors/broker; calls carry the
// logged-in account as their Caller, so the API's Authorizer decides each
// one exactly as for a remoting client), from the typed figures of the
// stages and counters that /metrics also exports (stage.Registry.Snapshot,
// stats.Counters, the pipeline's readings; never the Prometheus output),
// and from the timer wheel's slot counts. No store is read here.

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/instrument"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// consoleBackend implements console.Backend for a Node.
type consoleBackend struct {
	n *Node
	// role is the broker's replication role once replication holds one
	// (nil: standalone). SetRole wires it.
	role    atomic.Pointer[role.Holder]
	late    lateWindow
	rates   ratesOwner // console_rates.go
	resends resendLog  // the dead letters resent from the console (console_dlq.go)
	// counts keeps the broker's timer counts a moment (console_timers.go).
	counts countCache
}

// lateWindow keeps a reading of the lateness histogram so that the timer
// page shows the lateness of the last deliveries, not of all since the
// start: the difference from a reading 1 to 2 minutes old.
type lateWindow struct {
	mu       sync.Mutex
	old, mid *instrument.HistogramSnapshot // guarded by mu
	oldAt    time.Time                     // guarded by mu
	midAt    time.Time                     // guarded by mu
}

// lateSpan is the least age of the reading subtracted.
const lateSpan = time.Minute

// recent returns the deliveries of h since the older kept reading (all of
// h while there is none, or when none came since) and what they cover.
func (w *lateWindow) recent(h instrument.HistogramSnapshot, now time.Time) (instrument.HistogramSnapshot, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.mid == nil:
		w.mid, w.midAt = &h, now
	case now.Sub(w.midAt) >= lateSpan:
		w.old, w.oldAt, w.mid, w.midAt = w.mid, w.midAt, &h, now
	}
	if w.old == nil || h.Count <= w.old.Count {
		return h, "since the start"
	}
	d, ok := h.Since(*w.old)
	if !ok {
		return h, "since the start"
	}
	return d, "of the last " + now.Sub(w.oldAt).Round(time.Second).String()
}

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
	g := cb.guard()
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

func (cb *consoleBackend) Overview(ctx context.Context) (console.Overview, error) {
	n := cb.n
	o := console.Overview{Version: buildVersion(), Role: role.Name("", false, 0), Healthy: true,
		Connections: float64(n.net.connections())}
	for _, d := range n.stages.Down() {
		o.Healthy = false
		o.Down = append(o.Down, d.Error())
	}
	if b := n.broker; b != nil {
		p := b.pipe
		o.BrokerName, o.Cluster, o.Addr, o.Started = b.cfg.BrokerName, b.cfg.Cluster, b.Advertise(), p.Booted()
		o.MsgsIn, o.MsgsOut = float64(p.Counters().PutMessages()), float64(p.Counters().GotMessages())
		o.DiskWarn, o.DiskFull = b.cfg.DiskForceCleanRatio, b.cfg.DiskFullRatio
		o.DiskUsed, o.CommitLogBytes = p.Disk().Ratio(), float64(p.CommitLogBytes())
		o.TimersPending = float64(p.TimersPending())
	}
	if h := cb.role.Load(); h != nil {
		st := h.Get()
		o.Role = role.Name(st.Kind.String(), st.Fenced, 0)
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

// Stages reads the stages' figures (stage.Registry.Snapshot): the same
// numbers /metrics shows.
func (cb *consoleBackend) Stages(context.Context) ([]console.Stage, error) {
	now := time.Now()
	snaps := cb.n.stages.Snapshot()
	out := make([]console.Stage, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, console.Stage{Name: s.Name, Up: s.Up, ReadAt: now, Depth: float64(s.Depth),
			Messages: float64(s.Messages), Restarts: float64(s.Restarts),
			Seconds: s.Seconds.Sum, P99: s.Seconds.Quantile(0.99)})
	}
	return out, nil
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
	c := cb.n.broker.pipe.TimerCounts()
	h, over := cb.late.recent(c.Lateness, time.Now())
	t.LatenessP50, t.LatenessP99, t.LatenessMax, t.LatenessOver = h.Quantile(0.5), h.Quantile(0.99), h.MaxBound(), over
	t.Delivered, t.Cancelled, t.PopDeadlines = float64(c.Delivered), float64(c.Cancelled), float64(c.PopDeadlines)
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
