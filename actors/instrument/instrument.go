// Package instrument holds the broker's typed counters and histograms: the
// one place a figure is counted. /metrics exports them through Prometheus
// collectors read at scrape time (see Collector), and the console and the
// rates sampler read them as typed snapshots, so that every view shows the
// same number and none parses another's output.
package instrument

import (
	"math"
	"sync/atomic"
)

// Counter is a monotonic count; safe from any goroutine.
type Counter struct{ v atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// Load is the count.
func (c *Counter) Load() uint64 { return c.v.Load() }

// Histogram counts observations into fixed buckets (Prometheus's "le"
// semantics: an observation lands in the first bucket whose upper bound is
// at least the value; above the last bound, in +Inf). Safe from any
// goroutine; an Observe costs a short scan and three atomics.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits
}

// NewHistogram makes a histogram over bounds (ascending upper bounds; +Inf
// is implied).
func NewHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: append([]float64(nil), bounds...), counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts v.
func (h *Histogram) Observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Snapshot reads the histogram.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: h.bounds, Cumulative: make([]uint64, len(h.bounds))}
	var run uint64
	for i := range h.bounds {
		run += h.counts[i].Load()
		s.Cumulative[i] = run
	}
	s.Count = run + h.counts[len(h.bounds)].Load()
	s.Sum = math.Float64frombits(h.sum.Load())
	return s
}

// HistogramSnapshot is a reading of a Histogram: Cumulative[i] counts the
// observations at or below Bounds[i]; Count counts all of them (+Inf
// included). Bounds is shared with the histogram: do not modify it.
type HistogramSnapshot struct {
	Bounds     []float64
	Cumulative []uint64
	Count      uint64
	Sum        float64
}

// Quantile estimates q as the upper bound of the bucket holding it (the
// last bound when it lies above every bound; NaN when empty, which the
// pages show as "-").
func (s HistogramSnapshot) Quantile(q float64) float64 {
	if s.Count == 0 || len(s.Bounds) == 0 {
		return math.NaN()
	}
	rank := max(uint64(q*float64(s.Count)), 1)
	for i, c := range s.Cumulative {
		if c >= rank {
			return s.Bounds[i]
		}
	}
	return s.Bounds[len(s.Bounds)-1]
}

// MaxBound is the upper bound of the highest non-empty bucket below +Inf
// (NaN: none).
func (s HistogramSnapshot) MaxBound() float64 {
	var prev uint64
	hi := math.NaN()
	for i, c := range s.Cumulative {
		if c > prev {
			hi = s.Bounds[i]
		}
		prev = c
	}
	return hi
}

// Since is what was observed after older, an earlier reading of the same
// histogram; ok is false when older is not one (other bounds, or more
// observations than now).
func (s HistogramSnapshot) Since(older HistogramSnapshot) (d HistogramSnapshot, ok bool) {
	if len(older.Bounds) != len(s.Bounds) || older.Count > s.Count {
		return s, false
	}
	d = HistogramSnapshot{Bounds: s.Bounds, Cumulative: make([]uint64, len(s.Cumulative)),
		Count: s.Count - older.Count, Sum: s.Sum - older.Sum}
	for i, c := range s.Cumulative {
		d.Cumulative[i] = c - older.Cumulative[i]
	}
	return d, true
}
