package retention

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the retention stage's instruments.
type Metrics struct {
	segments *prometheus.CounterVec
	bytes    prometheus.Counter
	rewrites prometheus.Counter
	rewBytes prometheus.Counter
	pins     *prometheus.GaugeVec
}

// NewMetrics creates the instruments, with the disk gauges read from disk
// at scrape time, and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer, disk *Disk) *Metrics {
	m := &Metrics{
		segments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wheelmq_retention_segments_deleted_total",
			Help: "CommitLog segments deleted by retention, by reason (expired, disk, forced).",
		}, []string{"reason"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wheelmq_retention_bytes_deleted_total", Help: "CommitLog bytes deleted by retention.",
		}),
		rewrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wheelmq_timer_rewritten_total",
			Help: "Pending timer messages copied forward into a new CommitLog record so that retention could delete the old one.",
		}),
		rewBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wheelmq_timer_rewritten_bytes_total", Help: "CommitLog bytes written by those copies.",
		}),
		pins: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wheelmq_retention_pin_offset",
			Help: "CommitLog offset each pin needs kept at the last retention round (-1: none); retention never deletes at or after the lowest.",
		}, []string{"pin"}),
	}
	for _, r := range []string{ReasonExpired, ReasonDisk, ReasonForced} {
		m.segments.WithLabelValues(r) // every series exists from the start
	}
	if reg != nil {
		reg.MustRegister(m.segments, m.bytes, m.rewrites, m.rewBytes, m.pins,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "wheelmq_store_disk_used_ratio", Help: "Used fraction of the file system holding the data directory (sampled every second).",
			}, disk.Ratio),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "wheelmq_store_disk_full", Help: "1 while disk use is at or above the full ratio and sends are refused.",
			}, func() float64 {
				if disk.Full() {
					return 1
				}
				return 0
			}),
		)
	}
	return m
}

func (m *Metrics) deleted(reason string, bytes int64) {
	if reason == "" {
		reason = ReasonExpired
	}
	m.segments.WithLabelValues(reason).Inc()
	m.bytes.Add(float64(bytes))
}

func (m *Metrics) rolled(n int, bytes int64) {
	m.rewrites.Add(float64(n))
	m.rewBytes.Add(float64(bytes))
}

func (m *Metrics) pin(name string, off int64) {
	if off == 1<<63-1 {
		off = -1
	}
	m.pins.WithLabelValues(name).Set(float64(off))
}
