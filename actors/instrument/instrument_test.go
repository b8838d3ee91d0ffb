package instrument

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestHistogramMatchesPrometheus: the same observations give the same
// buckets, count and sum as a Prometheus histogram of the same bounds, and
// the exported sample is what the snapshot says.
func TestHistogramMatchesPrometheus(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1, 1}
	h := NewHistogram(bounds)
	p := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", Buckets: bounds})
	for _, v := range []float64{0, 0.001, 0.0011, 0.05, 0.1, 0.5, 1, 2, 30} {
		h.Observe(v)
		p.Observe(v)
	}
	var want dto.Metric
	if err := p.Write(&want); err != nil {
		t.Fatal(err)
	}
	s := h.Snapshot()
	if s.Count != want.GetHistogram().GetSampleCount() || s.Sum != want.GetHistogram().GetSampleSum() {
		t.Fatalf("count %d sum %v, prometheus %d %v", s.Count, s.Sum, want.GetHistogram().GetSampleCount(), want.GetHistogram().GetSampleSum())
	}
	for i, b := range want.GetHistogram().GetBucket() {
		if s.Cumulative[i] != b.GetCumulativeCount() {
			t.Errorf("bucket le=%v: %d, prometheus %d", b.GetUpperBound(), s.Cumulative[i], b.GetCumulativeCount())
		}
	}
	var got dto.Metric
	if err := ConstHistogram(prometheus.NewDesc("x", "x", nil, nil), s).Write(&got); err != nil {
		t.Fatal(err)
	}
	if got.GetHistogram().GetSampleCount() != s.Count || len(got.GetHistogram().GetBucket()) != len(bounds) {
		t.Fatalf("exported %v", got.GetHistogram())
	}
	// 9 observations: the median is the 4th (rank 4, bucket le=0.1), p99 in +Inf (the last bound).
	if q := s.Quantile(0.5); q != 0.1 {
		t.Errorf("p50 = %v, want 0.1", q)
	}
	if q := s.Quantile(0.99); q != 1 {
		t.Errorf("p99 = %v, want 1 (the last bound)", q)
	}
	if m := s.MaxBound(); m != 1 {
		t.Errorf("max bound = %v, want 1", m)
	}
	if !math.IsNaN(NewHistogram(bounds).Snapshot().Quantile(0.5)) {
		t.Error("an empty histogram has a median")
	}
	old := s
	h.Observe(0.005)
	d, ok := h.Snapshot().Since(old)
	if !ok || d.Count != 1 || d.Cumulative[0] != 0 || d.Cumulative[1] != 1 || d.Quantile(0.5) != 0.01 {
		t.Errorf("since: %+v %v", d, ok)
	}
	if _, ok := old.Since(h.Snapshot()); ok {
		t.Error("a later reading subtracted from an earlier one")
	}
}
