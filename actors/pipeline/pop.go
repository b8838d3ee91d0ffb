package pipeline

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/metalog"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// popMaster is the POP engine's Master: nil on a standalone broker, the
// role's kind in a replicated group.
func (p *Pipeline) popMaster() func() bool {
	if !p.replicated() {
		return nil
	}
	return func() bool { return p.role != nil && p.role.Get().Kind == role.Master }
}

// newPopEngine makes the POP engine (it outlives restarts of its stage);
// with the metadata log's progress, a promotion waits for the log to be
// applied (pop.Options.ModesApplied).
func (p *Pipeline) newPopEngine(log zerolog.Logger, progress *metalog.Progress) *pop.Engine {
	var modesApplied func(int64) (bool, error)
	if progress != nil {
		modesApplied = progress.AppliedBelow
	}
	eng := pop.New(pop.Options{
		Store: p.store, BrokerName: p.cfg.BrokerName, Parked: &p.popParked, Append: p.appends.Push,
		Offsets: func() *stage.Stage { return p.Stage(offsets.StageName) },
		Late:    func(ms int64) { p.popLate.Observe(float64(ms) / 1000) },
		Consumed: func(group, topic string, msgs, bytes int) {
			p.counters.Consumed(stats.ViaPop, group, topic, msgs, bytes)
		},
		MaxAttempts: func(group string) int32 {
			if g, ok := p.groupView.Get(group); ok {
				return g.RetryMaxTimes + 1
			}
			return meta.DefaultRetryMaxTimes + 1
		},
		RetryPolicy: func(group string) (meta.RetryPolicy, bool) {
			if g, ok := p.groupView.Get(group); ok {
				rp := g.RetryPolicy()
				return rp, !rp.Default
			}
			return meta.RetryPolicy{}, false
		},
		EnsureTopic:  p.EnsureGroupTopic,
		Master:       p.popMaster(),
		ModesChanged: func() { p.toMetaLog(metalog.ModesChanged{}) },
		ModesApplied: modesApplied,
		Logger:       log,
	})
	p.popEngine.Store(eng)
	return eng
}

// newPopLate is the histogram of how late the timer wheel made POP
// deliveries visible again after their invisibility deadline.
func newPopLate() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "wheelmq_pop_redelivery_late_seconds",
		Help:    "How long after its invisibility deadline an un-acked POP delivery became visible again (timer wheel).",
		Buckets: []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	})
}

// registerPopMetrics exposes the POP engine's counters (read at scrape
// time from the engine, which outlives restarts of its stage).
func registerPopMetrics(reg prometheus.Registerer, p *Pipeline) {
	counter := func(name, help string, f func(*pop.Metrics) *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			if e := p.popEngine.Load(); e != nil {
				return float64(f(e.Counters()).Load())
			}
			return 0
		})
	}
	reg.MustRegister(
		p.popLate,
		counter("wheelmq_pop_requests_total", "POP_MESSAGE requests answered (found or not).",
			func(m *pop.Metrics) *atomic.Int64 { return &m.Pops }),
		counter("wheelmq_pop_delivered_total", "Messages handed out by pops (redeliveries included).",
			func(m *pop.Metrics) *atomic.Int64 { return &m.Delivered }),
		counter("wheelmq_pop_acks_total", "Deliveries acked (ACK_MESSAGE, BATCH_ACK_MESSAGE, gRPC AckMessage).",
			func(m *pop.Metrics) *atomic.Int64 { return &m.Acks }),
		counter("wheelmq_pop_changes_total", "Invisible-time changes of live deliveries.",
			func(m *pop.Metrics) *atomic.Int64 { return &m.Changes }),
		counter("wheelmq_pop_expiries_total", "Deliveries not acked by their deadline, made visible again.",
			func(m *pop.Metrics) *atomic.Int64 { return &m.Expiries }),
		counter("wheelmq_pop_backed_off_total", "Expired deliveries held back by their group's retry policy before being offered again.",
			func(m *pop.Metrics) *atomic.Int64 { return &m.BackedOff }),
		counter("wheelmq_pop_refused_total", "Acks and changes refused: a stale, unknown or malformed receipt handle.",
			func(m *pop.Metrics) *atomic.Int64 { return &m.Refused }),
		counter("wheelmq_pop_dead_lettered_total", "Messages moved to their group's %DLQ% topic after the group's max attempts.",
			func(m *pop.Metrics) *atomic.Int64 { return &m.DeadLettered }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_pop_inflight", Help: "POP deliveries in flight (popped, neither acked nor expired).",
		}, func() float64 {
			if e := p.popEngine.Load(); e != nil {
				return float64(e.Inflight())
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_pop_journal_replayed_entries",
			Help: "POP journal entries read at the last start (from the stored replay start, docs/pop.md).",
		}, func() float64 {
			if e := p.popEngine.Load(); e != nil {
				return float64(e.ReplayedEntries())
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_pop_parked", Help: "POP long polls parked in the pop stage.",
		}, func() float64 { return float64(p.popParked.Load()) }),
	)
}
