package timer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/actors/instrument"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// Metrics are the timer instruments counted by the stages; the wheel's own
// counters (pending, enqueued, rolled) are read at scrape time, see
// RegisterWheelGauges.
type Metrics struct {
	// Delivered counts timer messages written back to their real topic;
	// PopDeadlines counts the POP engine's invisibility deadlines the wheel
	// reached (timers of PopReviveTopic), apart: they are no client's
	// timers, and their lateness is wheelmq_pop_redelivery_late_seconds.
	Delivered    *instrument.Counter
	PopDeadlines *instrument.Counter
	Cancelled    *instrument.Counter
	Duplicates   *prometheus.CounterVec
	Skipped      *prometheus.CounterVec
	Lateness     *instrument.Histogram
	// StoreFailed is 1 while the timer store is failed (a write or sync
	// error) and timers are paused until it reopens.
	StoreFailed prometheus.Gauge
}

// NewMetrics creates the timer instruments and registers them with reg
// (nil: not registered). wheel, when non-nil, backs the gauges read at
// scrape time.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Delivered:    &instrument.Counter{},
		PopDeadlines: &instrument.Counter{},
		Cancelled:    &instrument.Counter{},
		Duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_timer_duplicates_total",
			Help: "Timers released again after a restart that were already written back: suppressed, or delivered again.",
		}, []string{"outcome"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_timer_skipped_total", Help: "Timer messages dropped because they could not be processed.",
		}, []string{"reason"}),
		StoreFailed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wheelmq_timer_store_failed",
			Help: "1 while the timer store is failed by a write or sync error and timers are paused until it reopens.",
		}),
		Lateness: instrument.NewHistogram([]float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
	}
	// The known label values exist from the start, at 0, so that alerts
	// and dashboards see the series before the first event.
	for _, r := range SkipReasons {
		m.Skipped.WithLabelValues(r)
	}
	for _, o := range DuplicateOutcomes {
		m.Duplicates.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.Duplicates, m.Skipped, m.StoreFailed,
			instrument.CounterFunc(prometheus.CounterOpts{
				Name: "wheelmq_timer_delivered_total", Help: "Timer messages written back to their real topic.",
			}, m.Delivered),
			instrument.CounterFunc(prometheus.CounterOpts{
				Name: "wheelmq_timer_pop_deadlines_total",
				Help: "POP invisibility deadlines the wheel reached (the POP engine's timers, not counted as delivered timers).",
			}, m.PopDeadlines),
			instrument.CounterFunc(prometheus.CounterOpts{
				Name: "wheelmq_timer_cancelled_total", Help: "Timer messages suppressed by a cancel (a stopped recurring timer's fires too).",
			}, m.Cancelled),
			instrument.HistogramCollector("wheelmq_timer_lateness_seconds",
				"Delay between a timer's due time and its write-back to the real topic.", m.Lateness))
	}
	return m
}

// SkipReasons are the reason label values of wheelmq_timer_skipped_total:
// a timer message whose stored record cannot be read back (unreadable),
// decoded (undecodable), re-encoded for its real topic (unencodable), that
// names no real topic and queue (no_real_topic), or whose TIMER_OUT_MS is
// not a time (bad_timer_out_ms), or that the wheel would refuse (invalid).
var SkipReasons = []string{"unreadable", "undecodable", "unencodable", "no_real_topic", "bad_timer_out_ms", "invalid", "stale"}

// DuplicateOutcomes are the outcome label values of
// wheelmq_timer_duplicates_total: a timer released again after a restart
// whose write-back was found in the CommitLog and skipped (suppressed).
var DuplicateOutcomes = []string{"suppressed"}

// PopReviveTopic is the system topic the POP engine's invisibility
// deadlines are timers of (actors/pop): the wheel writes them back there,
// and they are counted apart from client timers.
const PopReviveTopic = "rmq_sys_wheelmq_pop_revive"

// dueWindow is the look-ahead of wheelmq_timer_due_next_minute.
const dueWindow = time.Minute

// RegisterWheelGauges exports the wheel's gauges, read at scrape time.
func RegisterWheelGauges(reg prometheus.Registerer, wheel *timerwheel.Store) {
	gauge := func(name, help string, f func(timerwheel.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return f(wheel.Stats()) })
	}
	counter := func(name, help string, f func(timerwheel.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return f(wheel.Stats()) })
	}
	reg.MustRegister(
		gauge("wheelmq_timer_pending", "Timers waiting in the wheel.", func(s timerwheel.Stats) float64 { return float64(s.Pending) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_timer_due_next_minute",
			Help: "Timers (cancels excluded) due within the next 60 s and not yet delivered, overdue ones included; counted by 10 ms slot.",
		}, func() float64 { return float64(wheel.DueWithin(time.Now().UnixMilli(), dueWindow.Milliseconds())) }),
		gauge("wheelmq_timer_log_bytes", "Bytes in the TimerLog.", func(s timerwheel.Stats) float64 { return float64(s.LogBytes) }),
		counter("wheelmq_timer_enqueued_total", "Timer records added to the timer wheel (cancels included, replays not).",
			func(s timerwheel.Stats) float64 { return float64(s.Added) }),
		counter("wheelmq_timer_rolled_total", "Timer records moved from the far wheel to the near wheel (the message is never rewritten).",
			func(s timerwheel.Stats) float64 { return float64(s.Relinked + s.Rolled) }),
	)
}

// Counts are the timer counters' values, as /metrics shows them.
type Counts struct {
	Delivered, PopDeadlines, Cancelled uint64
	Lateness                           instrument.HistogramSnapshot
}

// Counts reads the counters.
func (m *Metrics) Counts() Counts {
	return Counts{Delivered: m.Delivered.Load(), PopDeadlines: m.PopDeadlines.Load(), Cancelled: m.Cancelled.Load(),
		Lateness: m.Lateness.Snapshot()}
}

// Counts reads the service's timer counters (zero before Start).
func (s *Service) Counts() Counts {
	if s == nil || s.opts.Metrics == nil {
		return Counts{}
	}
	return s.opts.Metrics.Counts()
}
