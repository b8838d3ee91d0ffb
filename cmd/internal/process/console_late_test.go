package process

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func hist(counts ...uint64) *dto.Histogram {
	h := &dto.Histogram{}
	var cum uint64
	for i, c := range counts {
		cum += c
		ub, cc := math.Pow(10, float64(i-3)), cum
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &ub, CumulativeCount: &cc})
	}
	h.SampleCount = &cum
	return h
}

// TestLateWindow: the lateness shown is that of the deliveries since a
// reading a minute or more old, once there is one; before, since the start.
func TestLateWindow(t *testing.T) {
	var w lateWindow
	t0 := time.Unix(1_700_000_000, 0)
	// 100 deliveries 1 ms late at the start.
	h, over := w.recent(hist(100, 0, 0, 0), t0)
	if over != "since the start" || quantile(h, 0.99) != 0.001 {
		t.Fatalf("first reading: %s p99 %v", over, quantile(h, 0.99))
	}
	// A minute later 10 more, 1 s late: those only.
	h, over = w.recent(hist(100, 0, 0, 10), t0.Add(61*time.Second))
	if over != "of the last 1m1s" || h.GetSampleCount() != 10 || quantile(h, 0.5) != 1 {
		t.Fatalf("window %s: count %d p50 %v", over, h.GetSampleCount(), quantile(h, 0.5))
	}
	// Another minute and 5 more: those since the 61 s reading.
	h, over = w.recent(hist(100, 0, 0, 15), t0.Add(122*time.Second))
	if over != "of the last 1m1s" || h.GetSampleCount() != 5 || quantile(h, 0.5) != 1 || maxBound(h) != 1 {
		t.Fatalf("window %s: count %d p50 %v max %v", over, h.GetSampleCount(), quantile(h, 0.5), maxBound(h))
	}
	// Nothing delivered since: back to everything since the start.
	if _, over = w.recent(hist(100, 0, 0, 10), t0.Add(123*time.Second)); over != "since the start" {
		t.Fatalf("no new deliveries: %s", over)
	}
	if !math.IsNaN(quantile(hist(0, 0), 0.5)) {
		t.Fatal("empty histogram has a quantile")
	}
}
