package instrument

import (
	"github.com/prometheus/client_golang/prometheus"
)

// CounterFunc exports c as the Prometheus counter described by opts.
func CounterFunc(opts prometheus.CounterOpts, c *Counter) prometheus.Collector {
	return prometheus.NewCounterFunc(opts, func() float64 { return float64(c.Load()) })
}

// histogramCollector exports one Histogram.
type histogramCollector struct {
	desc *prometheus.Desc
	h    *Histogram
}

// HistogramCollector exports h as the Prometheus histogram named name.
func HistogramCollector(name, help string, h *Histogram) prometheus.Collector {
	return &histogramCollector{desc: prometheus.NewDesc(name, help, nil, nil), h: h}
}

// Describe implements prometheus.Collector.
func (c *histogramCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *histogramCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- ConstHistogram(c.desc, c.h.Snapshot())
}

// ConstHistogram is s as a Prometheus histogram sample of desc with
// labelValues.
func ConstHistogram(desc *prometheus.Desc, s HistogramSnapshot, labelValues ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(s.Bounds))
	for i, b := range s.Bounds {
		buckets[b] = s.Cumulative[i]
	}
	return prometheus.MustNewConstHistogram(desc, s.Count, s.Sum, buckets, labelValues...)
}
