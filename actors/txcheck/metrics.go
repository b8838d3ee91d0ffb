package txcheck

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the transaction stage's instruments.
type Metrics struct {
	// Ends counts ended transactions by outcome (commit, rollback, discard).
	Ends *prometheus.CounterVec
	// Checks counts CHECK_TRANSACTION_STATE requests: sent, or no_producer
	// (no live producer of the group took it; not counted as a check).
	Checks *prometheus.CounterVec
	// Discarded counts transactions given up after their checks.
	Discarded prometheus.Counter
	// Unreadable counts half messages that could not be read.
	Unreadable prometheus.Counter
	// Pending is the number of open transactions.
	Pending prometheus.Gauge
}

// NewMetrics creates the instruments and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Ends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_transaction_ends_total", Help: "Transactions ended, by outcome (commit, rollback, discard).",
		}, []string{"outcome"}),
		Checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_transaction_checks_total",
			Help: "CHECK_TRANSACTION_STATE requests: sent to a producer, or no_producer online to take it.",
		}, []string{"result"}),
		Discarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wheelmq_transaction_discarded_total",
			Help: "Transactions given up after their checks (moved to TRANS_CHECK_MAX_TIME_TOPIC).",
		}),
		Unreadable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wheelmq_transaction_unreadable_total", Help: "Half messages that could not be read and were skipped.",
		}),
		Pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wheelmq_transaction_open", Help: "Open transactions (half messages not committed or rolled back yet).",
		}),
	}
	// Every label value exists from the start, at 0: a dashboard or an
	// alert on a rate sees the series before the first event.
	for _, o := range []Outcome{Commit, Rollback, Discard} {
		m.Ends.WithLabelValues(o.String())
	}
	for _, r := range []string{"sent", "no_producer"} {
		m.Checks.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.Ends, m.Checks, m.Discarded, m.Unreadable, m.Pending)
	}
	return m
}
