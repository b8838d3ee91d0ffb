package broker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// registerStoreMetrics exposes store gauges computed at scrape time.
func registerStoreMetrics(reg prometheus.Registerer, b *Broker) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_commitlog_bytes", Help: "Bytes in the CommitLog (max offset minus min offset).",
		}, func() float64 {
			cl := b.store.CommitLog
			return float64(cl.MaxOffset() - cl.MinOffset())
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_unflushed_bytes", Help: "CommitLog bytes written but not yet fsynced.",
		}, func() float64 {
			cl := b.store.CommitLog
			return float64(cl.MaxOffset() - cl.FlushedOffset())
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_dispatch_lag_bytes", Help: "CommitLog bytes not yet in the consume queues.",
		}, func() float64 {
			return float64(b.store.CommitLog.MaxOffset() - b.store.Dispatched.Load())
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_broker_send_backlog", Help: "Sends handed to the commitlog writer and not yet answered.",
		}, func() float64 { return float64(b.backlog.Load()) }),
	)
}
