// Package scrape reads a wheelmq /metrics page (Prometheus text
// exposition) into a Snapshot that wheelctl's views query by metric name
// and label, and computes histogram quantiles the way PromQL's
// histogram_quantile does, so `wheelctl top` and a Grafana panel agree.
//
// Parsing is separate from fetching: Parse takes the text and the time it
// was read, so views can be tested on a recorded page.
package scrape

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxPage bounds the size of a /metrics page Fetch reads.
const MaxPage = 16 << 20

// Snapshot is one reading of a /metrics page.
type Snapshot struct {
	// At is when the page was read.
	At       time.Time
	families map[string]*dto.MetricFamily
}

// Parse decodes a Prometheus text page read at at.
func Parse(text []byte, at time.Time) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse /metrics text: %w", err)
	}
	return &Snapshot{At: at, families: fams}, nil
}

// Fetch reads and parses the page at url; ctx bounds the whole request.
func Fetch(ctx context.Context, client *http.Client, url string) (*Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics url %q: %w", url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read %s: HTTP %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxPage+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	if len(b) > MaxPage {
		return nil, fmt.Errorf("read %s: page larger than %d bytes", url, MaxPage)
	}
	return Parse(b, time.Now())
}

// Has reports whether the page has a family named name (with at least one
// series).
func (s *Snapshot) Has(name string) bool {
	f, ok := s.families[name]
	return ok && len(f.GetMetric()) > 0
}

// Names returns the family names on the page, sorted.
func (s *Snapshot) Names() []string {
	names := make([]string, 0, len(s.families))
	for n := range s.families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// matches reports whether m carries every label pair of sel
// (name, value, name, value, ...).
func matches(m *dto.Metric, sel []string) bool {
	for i := 0; i+1 < len(sel); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == sel[i] && lp.GetValue() == sel[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Value sums the series of a counter, gauge or untyped family that carry
// the label pairs sel (name, value, ...); ok is false when none does.
// For a histogram or summary it sums the sample counts.
func (s *Snapshot) Value(name string, sel ...string) (v float64, ok bool) {
	f := s.families[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if !matches(m, sel) {
			continue
		}
		ok = true
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Untyped != nil:
			v += m.GetUntyped().GetValue()
		case m.Histogram != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		case m.Summary != nil:
			v += float64(m.GetSummary().GetSampleCount())
		}
	}
	return v, ok
}

// LabelValues returns the distinct values of label in family name, sorted.
func (s *Snapshot) LabelValues(name, label string) []string {
	f := s.families[name]
	if f == nil {
		return nil
	}
	var vals []string
	for _, m := range f.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && !slices.Contains(vals, lp.GetValue()) {
				vals = append(vals, lp.GetValue())
			}
		}
	}
	sort.Strings(vals)
	return vals
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	UpperBound float64 // seconds, or whatever the histogram measures; +Inf last
	Count      float64 // observations <= UpperBound
}

// Histogram is a cumulative histogram, summed over the selected series.
type Histogram struct {
	Buckets []Bucket // ascending bounds, ending with +Inf
	Count   float64
	Sum     float64
}

// Histogram returns the histogram family name summed over the series that
// carry the label pairs sel; ok is false when there is none.
func (s *Snapshot) Histogram(name string, sel ...string) (h Histogram, ok bool) {
	f := s.families[name]
	if f == nil {
		return Histogram{}, false
	}
	for _, m := range f.GetMetric() {
		mh := m.GetHistogram()
		if mh == nil || !matches(m, sel) {
			continue
		}
		ok = true
		h.Count += float64(mh.GetSampleCount())
		h.Sum += mh.GetSampleSum()
		for _, b := range mh.GetBucket() {
			h.add(b.GetUpperBound(), float64(b.GetCumulativeCount()))
		}
	}
	if ok {
		h.add(math.Inf(1), h.Count) // the exposition leaves +Inf implicit in the proto
	}
	return h, ok
}

// add merges a bucket count into h, keeping bounds sorted; the +Inf
// bucket is set, not summed (it equals Count).
func (h *Histogram) add(bound, count float64) {
	i, found := slices.BinarySearchFunc(h.Buckets, bound, func(b Bucket, t float64) int {
		switch {
		case b.UpperBound < t:
			return -1
		case b.UpperBound > t:
			return 1
		}
		return 0
	})
	switch {
	case found && math.IsInf(bound, 1):
		h.Buckets[i].Count = count
	case found:
		h.Buckets[i].Count += count
	default:
		h.Buckets = slices.Insert(h.Buckets, i, Bucket{UpperBound: bound, Count: count})
	}
}

// Sub returns the observations of h made since prev (a reading of the
// same histogram taken earlier). A counter reset (the process restarted)
// yields h itself.
func (h Histogram) Sub(prev Histogram) Histogram {
	if prev.Count > h.Count || len(prev.Buckets) != len(h.Buckets) {
		return h
	}
	d := Histogram{Count: h.Count - prev.Count, Sum: h.Sum - prev.Sum, Buckets: make([]Bucket, len(h.Buckets))}
	for i, b := range h.Buckets {
		if prev.Buckets[i].UpperBound != b.UpperBound {
			return h
		}
		d.Buckets[i] = Bucket{UpperBound: b.UpperBound, Count: b.Count - prev.Buckets[i].Count}
	}
	return d
}

// Quantile estimates the q-quantile (0..1) as PromQL's histogram_quantile:
// linear interpolation inside the bucket that holds the rank, the lower
// bound of the first bucket taken as 0, and the highest finite bound
// returned when the rank falls in the +Inf bucket. NaN when h is empty.
func (h Histogram) Quantile(q float64) float64 {
	if len(h.Buckets) == 0 || h.Count <= 0 || q < 0 || q > 1 || math.IsNaN(q) {
		return math.NaN()
	}
	rank := q * h.Count
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.Buckets {
		if b.Count >= rank && b.Count > prevCount {
			if math.IsInf(b.UpperBound, 1) {
				if i == 0 {
					return math.NaN()
				}
				return h.Buckets[i-1].UpperBound
			}
			if i == 0 && b.UpperBound <= 0 {
				return b.UpperBound
			}
			return prevBound + (b.UpperBound-prevBound)*(rank-prevCount)/(b.Count-prevCount)
		}
		prevBound, prevCount = b.UpperBound, b.Count
	}
	return prevBound
}
