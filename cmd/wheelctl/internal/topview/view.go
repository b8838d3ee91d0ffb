// Package topview is the pure model of `wheelctl top`: it turns two
// readings of a wheelmq /metrics page into the figures an operator watches
// (actor stages, timer pipeline, store) and renders them as text of a
// given width. It has no terminal code: the TUI in cmd/wheelctl draws the
// string, and tests render recorded pages.
//
// Every figure comes from a metric the broker exports today:
//
//	broker  wheelmq_broker_healthy, wheelmq_requests_total{code} and
//	        wheelmq_requests_refused_total{code} (per second)
//	stages  wheelmq_actor_messages_total (msg/s), wheelmq_actor_mailbox_depth,
//	        wheelmq_actor_process_seconds (p99 and busy share over the interval),
//	        wheelmq_actor_restarts_total, wheelmq_stage_up
//	timers  wheelmq_timer_pending, wheelmq_timer_enqueued_total,
//	        wheelmq_timer_delivered_total, wheelmq_timer_lateness_seconds,
//	        wheelmq_timer_rolled_total, wheelmq_timer_cancelled_total,
//	        wheelmq_timer_skipped_total, wheelmq_timer_duplicates_total,
//	        wheelmq_timer_log_bytes, wheelmq_timer_due_next_minute (n/a from a
//	        broker that does not export it)
//	store   wheelmq_store_commitlog_bytes (write rate), wheelmq_store_unflushed_bytes,
//	        wheelmq_store_dispatch_lag_bytes, wheelmq_broker_send_backlog
package topview

import (
	"math"
	"slices"
	"time"

	"github.com/wheelmq/wheelmq/cmd/wheelctl/internal/scrape"
)

// Metric names read by the view.
const (
	StageDepth      = "wheelmq_actor_mailbox_depth"
	StageMessages   = "wheelmq_actor_messages_total"
	StageSeconds    = "wheelmq_actor_process_seconds"
	StageRestarts   = "wheelmq_actor_restarts_total"
	StageUp         = "wheelmq_stage_up"
	BrokerHealthy   = "wheelmq_broker_healthy"
	Requests        = "wheelmq_requests_total"
	Refusals        = "wheelmq_requests_refused_total"
	TimerPending    = "wheelmq_timer_pending"
	TimerDueSoon    = "wheelmq_timer_due_next_minute" // n/a from brokers older than the gauge
	TimerEnqueued   = "wheelmq_timer_enqueued_total"
	TimerDelivered  = "wheelmq_timer_delivered_total"
	TimerLateness   = "wheelmq_timer_lateness_seconds"
	TimerRolled     = "wheelmq_timer_rolled_total"
	TimerCancelled  = "wheelmq_timer_cancelled_total"
	TimerSkipped    = "wheelmq_timer_skipped_total"
	TimerDuplicates = "wheelmq_timer_duplicates_total"
	TimerLogBytes   = "wheelmq_timer_log_bytes"
	TimerPopDue     = "wheelmq_timer_pop_deadlines_total"
	MessagesIn      = "wheelmq_messages_in_total"
	MessagesOut     = "wheelmq_messages_out_total"
	StoreCommitLog  = "wheelmq_store_commitlog_bytes"
	StoreUnflushed  = "wheelmq_store_unflushed_bytes"
	StoreDispatch   = "wheelmq_store_dispatch_lag_bytes"
	SendBacklog     = "wheelmq_broker_send_backlog"
	ProcessStart    = "process_start_time_seconds"
	ProcessRSS      = "process_resident_memory_bytes"
	Goroutines      = "go_goroutines"
)

// stageOrder is the pipeline order of the broker's stages (dequeue_message
// is the single worker of older brokers); others follow alphabetically.
var stageOrder = []string{"commitlog", "dispatch", "pull", "offsets", "clients", "topics", "registrar",
	"enqueue_get", "enqueue_put", "dequeue_get", "dequeue_message", "dequeue_message_0", "dequeue_message_1", "dequeue_message_2",
	"dequeue_message_3", "dequeue_message_4", "dequeue_message_5", "dequeue_message_6", "dequeue_message_7",
	"dequeue_put", "timer_flush"}

// NaN marks a figure that is unknown (no metric, or no interval yet).
var NaN = math.NaN()

// Stage is one actor stage's row.
type Stage struct {
	Name        string
	Rate        float64 // messages processed per second
	Depth       float64 // mailbox depth now
	P99         float64 // seconds per message, over the interval (cumulative on the first reading)
	Busy        float64 // share of the interval spent processing, 0..1
	Restarts    float64 // since the broker started
	NewRestarts float64 // within the interval
	Down        bool    // stopped for good by its supervisor (wheelmq_stage_up 0)
}

// CodeRate is a request or response code with its rate.
type CodeRate struct {
	Code string
	Rate float64
}

// Traffic is the broker port's request figures.
type Traffic struct {
	Rate, RefusedRate float64    // per second
	Busiest           []CodeRate // request codes by rate, at most 4
	Refused           []CodeRate // response codes of refusals by rate, at most 3
}

// Timers are the timer pipeline's figures.
type Timers struct {
	Pending, DueNextMinute              float64
	EnqueuedRate, DeliveredRate         float64 // per second
	RolledRate                          float64 // per second
	LatenessP50, LatenessP99            float64 // seconds, over the interval (cumulative on the first reading)
	Cancelled, Skipped, Duplicates, Log float64 // totals; Log is TimerLog bytes
	// PopDeadlines is the POP invisibility deadlines the wheel reached
	// (counted apart from delivered timers).
	PopDeadlines float64
}

// Messages are the broker's messages in (client sends) and out (consumed
// by every protocol), the numbers the console's Overview shows.
type Messages struct {
	In, Out         float64 // totals since the start
	InRate, OutRate float64 // per second
}

// Store is the store's figures.
type Store struct {
	WriteRate                 float64 // CommitLog bytes per second
	CommitLog, Unflushed, Lag float64 // bytes
	SendBacklog               float64 // sends waiting for the writer
}

// View is everything one frame shows.
type View struct {
	At         time.Time
	Interval   time.Duration // between the two readings (0: first reading, no rates)
	Uptime     time.Duration // 0: unknown
	RSS        float64
	Goroutines float64
	// Healthy is wheelmq_broker_healthy (NaN: not exported).
	Healthy    float64
	Traffic    Traffic
	HasTraffic bool // the page has wheelmq_requests_total
	Stages     []Stage
	Timers     Timers
	Messages   Messages
	Store      Store
	// NotWheelmq is set when the page has none of the broker's metrics.
	NotWheelmq bool
}

// Build computes a view from the current reading and the previous one
// (nil on the first reading: rates are unknown, quantiles cumulative).
func Build(prev, cur *scrape.Snapshot) View {
	v := View{At: cur.At, RSS: value(cur, ProcessRSS), Goroutines: value(cur, Goroutines)}
	if prev != nil && cur.At.After(prev.At) {
		v.Interval = cur.At.Sub(prev.At)
	}
	if start, ok := cur.Value(ProcessStart); ok && start > 0 {
		v.Uptime = cur.At.Sub(time.Unix(0, int64(start*1e9))).Round(time.Second)
	}
	v.NotWheelmq = !cur.Has(StageMessages) && !cur.Has(TimerPending) && !cur.Has(StoreCommitLog)
	r := rater{prev: prev, cur: cur, dt: v.Interval.Seconds()}

	names := cur.LabelValues(StageMessages, "stage")
	slices.SortStableFunc(names, func(a, b string) int { return stageRank(a) - stageRank(b) })
	for _, name := range names {
		s := Stage{Name: name, Depth: value(cur, StageDepth, "stage", name),
			Rate: r.rate(StageMessages, "stage", name), Restarts: value(cur, StageRestarts, "stage", name),
			NewRestarts: r.delta(StageRestarts, "stage", name), Busy: NaN}
		h := r.hist(StageSeconds, "stage", name)
		s.P99 = h.Quantile(0.99)
		if up, ok := cur.Value(StageUp, "stage", name); ok && up == 0 {
			s.Down = true
		}
		if r.dt > 0 {
			s.Busy = math.Min(math.Max(h.Sum/r.dt, 0), 1)
		}
		v.Stages = append(v.Stages, s)
	}

	v.Healthy = value(cur, BrokerHealthy)
	v.Traffic = Traffic{Rate: r.rate(Requests), RefusedRate: r.rate(Refusals),
		Busiest: r.byLabel(Requests, "code", 4), Refused: r.byLabel(Refusals, "code", 3)}
	v.HasTraffic = cur.Has(Requests)
	if v.HasTraffic && v.Interval > 0 && !cur.Has(Refusals) {
		v.Traffic.RefusedRate = 0 // the family appears with the first refusal
	}

	lat := r.hist(TimerLateness)
	v.Timers = Timers{
		Pending: value(cur, TimerPending), DueNextMinute: value(cur, TimerDueSoon),
		EnqueuedRate: r.rate(TimerEnqueued), DeliveredRate: r.rate(TimerDelivered), RolledRate: r.rate(TimerRolled),
		LatenessP50: lat.Quantile(0.5), LatenessP99: lat.Quantile(0.99),
		Cancelled: value(cur, TimerCancelled), Skipped: valueOr0(cur, TimerSkipped),
		Duplicates: valueOr0(cur, TimerDuplicates), Log: value(cur, TimerLogBytes),
		PopDeadlines: value(cur, TimerPopDue),
	}
	v.Messages = Messages{In: value(cur, MessagesIn), Out: value(cur, MessagesOut),
		InRate: r.rate(MessagesIn), OutRate: r.rate(MessagesOut)}
	v.Store = Store{
		WriteRate: r.rate(StoreCommitLog), CommitLog: value(cur, StoreCommitLog),
		Unflushed: value(cur, StoreUnflushed), Lag: value(cur, StoreDispatch), SendBacklog: value(cur, SendBacklog),
	}
	return v
}

// stageRank orders stages by pipeline position, unknown ones last.
func stageRank(name string) int {
	if i := slices.Index(stageOrder, name); i >= 0 {
		return i
	}
	return len(stageOrder)
}

// value reads a metric (NaN when absent).
func value(s *scrape.Snapshot, name string, sel ...string) float64 {
	if v, ok := s.Value(name, sel...); ok {
		return v
	}
	return NaN
}

// valueOr0 reads a labelled counter whose series appear only on the first
// event (absent means zero).
func valueOr0(s *scrape.Snapshot, name string) float64 {
	v, _ := s.Value(name)
	return v
}

// rater computes changes between two readings.
type rater struct {
	prev, cur *scrape.Snapshot
	dt        float64 // seconds (0: no previous reading)
}

// delta is the increase of a counter over the interval (NaN: unknown or
// reset).
func (r rater) delta(name string, sel ...string) float64 {
	if r.dt <= 0 {
		return NaN
	}
	c, ok1 := r.cur.Value(name, sel...)
	p, ok2 := r.prev.Value(name, sel...)
	switch {
	case ok1 && !ok2:
		return c // appeared within the interval
	case !ok1:
		return NaN
	case c < p:
		return NaN // reset: the broker restarted
	}
	return c - p
}

// rate is delta per second; for a gauge that shrank (e.g. the CommitLog
// after retention) it is 0.
func (r rater) rate(name string, sel ...string) float64 {
	d := r.delta(name, sel...)
	if math.IsNaN(d) {
		if r.dt <= 0 {
			return NaN
		}
		c, ok1 := r.cur.Value(name, sel...)
		p, ok2 := r.prev.Value(name, sel...)
		if ok1 && ok2 && c < p && name == StoreCommitLog {
			return 0
		}
		return NaN
	}
	return d / r.dt
}

// hist is the histogram's observations within the interval, or all of
// them on the first reading.
func (r rater) hist(name string, sel ...string) scrape.Histogram {
	c, ok := r.cur.Histogram(name, sel...)
	if !ok {
		return scrape.Histogram{}
	}
	if r.dt <= 0 {
		return c
	}
	p, ok := r.prev.Histogram(name, sel...)
	if !ok {
		return c
	}
	return c.Sub(p)
}

// byLabel returns the label values of a counter family with the highest
// rates (non-zero only), at most n.
func (r rater) byLabel(name, label string, n int) []CodeRate {
	var out []CodeRate
	for _, v := range r.cur.LabelValues(name, label) {
		if rt := r.rate(name, label, v); rt > 0 {
			out = append(out, CodeRate{Code: v, Rate: rt})
		}
	}
	slices.SortStableFunc(out, func(a, b CodeRate) int {
		switch {
		case a.Rate > b.Rate:
			return -1
		case a.Rate < b.Rate:
			return 1
		}
		return 0
	})
	return out[:min(n, len(out))]
}
