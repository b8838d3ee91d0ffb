package registrar

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a wait ends without every name server's acknowledgement (the
// reason label of Metrics.Unacknowledged).
const (
	// ReasonFailed: a name server's registration of the table failed (it
	// is down, or refused it).
	ReasonFailed = "failed"
	// ReasonDeadline: a name server did not answer within RouteWait.
	ReasonDeadline = "deadline"
	// ReasonStopped: the stage stopped or restarted first.
	ReasonStopped = "stopped"
)

// Metrics are the registrar's counters.
type Metrics struct {
	// Unacknowledged counts the Awaits done before every name server
	// acknowledged the registration they waited for, by reason.
	Unacknowledged *prometheus.CounterVec
}

// NewMetrics makes the registrar's metrics and registers them with reg
// (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Unacknowledged: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wheelmq_registrar_unacknowledged_waits_total",
		Help: "Answers that waited for the name servers to have a new topic (the send that auto-created it, " +
			"UPDATE_AND_CREATE_TOPIC, a heartbeat that made a %RETRY% topic) given before every name server " +
			"acknowledged it, by reason: failed (a name server's registration failed), deadline (one did not " +
			"answer within the route wait), stopped (the registrar stopped).",
	}, []string{"reason"})}
	// Every label value exists from the start, at 0.
	for _, r := range []string{ReasonFailed, ReasonDeadline, ReasonStopped} {
		m.Unacknowledged.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.Unacknowledged)
	}
	return m
}

// expireWaits is the expiry timer's message: the oldest waiter's deadline
// passed.
type expireWaits struct{}

// waiter is one Await not done yet.
type waiter struct {
	want     int64
	topics   []string
	asked    time.Time
	deadline time.Time
	// left are the name servers it still waits for; failed those whose
	// registration failed.
	left   []*nameServer
	failed []string
	await  *Await
}

// await records an Await, done at once when every name server already
// acknowledged its version; otherwise each name server that did not gets
// a registration of the current table, unless one that carries the
// version is in flight (then it waits for that one).
func (r *registrar) await(m *Await) {
	if r.ctx == nil || r.ctx.Err() != nil {
		m.finish() // stopping
		return
	}
	now := time.Now()
	w := &waiter{want: m.Version, topics: m.Topics, asked: now, deadline: now.Add(r.opts.RouteWait), await: m}
	for _, n := range r.ns {
		if n.acked >= m.Version {
			continue
		}
		w.left = append(w.left, n)
	}
	if len(w.left) == 0 {
		m.finish()
		return
	}
	r.waiting = append(r.waiting, w)
	if len(r.waiting) == 1 {
		r.expiry.Arm(r.opts.RouteWait, expireWaits{})
	}
	for _, n := range slices.Clone(w.left) { // a failed start settles w
		switch {
		case !n.busy:
			r.start(n)
		case n.sending < m.Version:
			n.again = true
		}
	}
}

// settle records the end of a registration with n of the table of version
// sent: the waiters of that version or earlier stop waiting for n (as
// failed when err is set); those of a later one wait for the next call.
func (r *registrar) settle(n *nameServer, sent int64, err error) {
	for _, w := range slices.Clone(r.waiting) {
		i := slices.Index(w.left, n)
		if i < 0 || w.want > sent {
			continue
		}
		w.left = slices.Delete(w.left, i, i+1)
		if err != nil {
			w.failed = append(w.failed, n.addr)
		}
		if len(w.left) == 0 {
			r.finish(w, time.Now())
		}
	}
}

// waitedOn reports whether a waiter still waits for n.
func (r *registrar) waitedOn(n *nameServer) bool {
	for _, w := range r.waiting {
		if slices.Contains(w.left, n) {
			return true
		}
	}
	return false
}

// expire ends the waits whose deadline passed and arms the timer for the
// next one.
func (r *registrar) expire(now time.Time) {
	for len(r.waiting) > 0 && !r.waiting[0].deadline.After(now) {
		r.finish(r.waiting[0], now)
	}
	if len(r.waiting) > 0 {
		r.expiry.Arm(r.waiting[0].deadline.Sub(now), expireWaits{})
	}
}

// settleAll ends every wait: the stage stops or restarts.
func (r *registrar) settleAll() {
	now := time.Now()
	for len(r.waiting) > 0 {
		r.finish(r.waiting[0], now)
	}
}

// finish ends w's wait: it leaves the waiting list, its Done runs, and a
// wait that did not get every name server's acknowledgement is logged and
// counted.
func (r *registrar) finish(w *waiter, now time.Time) {
	if i := slices.Index(r.waiting, w); i >= 0 {
		r.waiting = slices.Delete(r.waiting, i, i+1)
	}
	if len(w.left) > 0 || len(w.failed) > 0 {
		reason := ReasonFailed
		switch {
		case len(w.left) > 0 && now.Before(w.deadline):
			reason = ReasonStopped
		case len(w.left) > 0:
			reason = ReasonDeadline
		}
		unanswered := make([]string, len(w.left))
		for i, n := range w.left {
			unanswered[i] = n.addr
		}
		r.opts.Logger.Warn().Strs("topics", w.topics).Int64("table_version", w.want).Str("reason", reason).
			Strs("unanswered", unanswered).Strs("failed", w.failed).Dur("waited", now.Sub(w.asked)).
			Msg("answered before every name server acknowledged the new route")
		if m := r.opts.Metrics; m != nil {
			m.Unacknowledged.WithLabelValues(reason).Inc()
		}
	}
	w.left = nil
	w.await.finish()
}
