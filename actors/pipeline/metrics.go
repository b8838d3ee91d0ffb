package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
)

// registerMetrics exposes the store gauges and the broker's health,
// computed at scrape time.
func registerMetrics(reg prometheus.Registerer, p *Pipeline) {
	registerStoreMetrics(reg, p)
	reg.MustRegister(
		p.parkRefused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_pull_backlog", Help: "Pulls and reads waiting in the pull stage for a free pull reader.",
		}, func() float64 {
			if ps := p.pulls.Load(); ps != nil {
				return float64(ps.Backlog())
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_commitlog_bytes", Help: "Bytes in the CommitLog (max offset minus min offset).",
		}, func() float64 { return float64(p.CommitLogBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_unflushed_bytes", Help: "CommitLog bytes written but not yet fsynced.",
		}, func() float64 {
			cl := p.store.CommitLog
			return float64(cl.MaxOffset() - cl.FlushedOffset())
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_dispatch_lag_bytes", Help: "CommitLog bytes not yet in the consume queues.",
		}, func() float64 {
			return float64(p.store.CommitLog.MaxOffset() - p.store.Dispatched.Load())
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_index_lag_bytes", Help: "CommitLog bytes not yet in the message index (0 with the index off).",
		}, func() float64 {
			if !p.cfg.Index {
				return 0
			}
			return float64(max(p.store.CommitLog.MaxOffset()-p.indexKick.Indexed(), 0))
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_broker_healthy",
			Help: "1 while every stage runs; 0 once a stage was stopped for good (see /healthz for which and why).",
		}, func() float64 {
			if len(p.Down()) > 0 {
				return 0
			}
			return 1
		}),
	)
}
