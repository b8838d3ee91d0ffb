package pipeline

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/storage"
)

// flushBuckets are the CommitLog fsync latency buckets: from a page-cache
// fsync on an idle SSD (~100 µs) to a disk in trouble (seconds).
var flushBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// registerStoreMetrics exports the CommitLog's fsync latency (observed per
// fsync round, never per message), its segment count, what recovery cut
// at open and the derived positions corrected at start (and after).
//
//	wheelmq_store_flush_seconds                  histogram of CommitLog fsync rounds that flushed data
//	wheelmq_store_commitlog_segments             CommitLog segment files
//	wheelmq_store_recovery_truncated_bytes       bytes recovery cut from the CommitLog tail at open
//	wheelmq_store_reconciled_total{what}         derived positions corrected against the recovered CommitLog
func registerStoreMetrics(reg prometheus.Registerer, p *Pipeline) {
	fixes := p.store.Corrections
	for _, what := range storage.CorrectionKinds {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "wheelmq_store_reconciled_total",
			Help: "Positions derived from the CommitLog (checkpoints, consume-queue units, timer entries, offsets) found " +
				"claiming more than the recovered CommitLog holds and corrected (docs/operations.md, \"Recovery\").",
			ConstLabels: prometheus.Labels{"what": what},
		}, func() float64 { return float64(fixes.Count(what)) }))
	}
	flush := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "wheelmq_store_flush_seconds",
		Help:    "Time of each CommitLog fsync round that flushed data (every 500 ms with async flush, per group commit with sync flush).",
		Buckets: flushBuckets,
	})
	cl := p.store.CommitLog
	cl.SetSyncObserver(func(d time.Duration) { flush.Observe(d.Seconds()) })
	truncated := float64(cl.Recovery().TruncatedBytes)
	reg.MustRegister(flush,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_commitlog_segments", Help: "CommitLog segment files.",
		}, func() float64 { return float64(cl.SegmentCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wheelmq_store_recovery_truncated_bytes",
			Help: "Bytes recovery cut from the CommitLog tail when the broker opened its store (a torn or corrupt tail after a crash; 0 after a clean stop).",
		}, func() float64 { return truncated }),
	)
}
