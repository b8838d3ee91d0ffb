package process

import (
	"math"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/instrument"
)

func hist(counts ...uint64) instrument.HistogramSnapshot {
	var h instrument.HistogramSnapshot
	for i, c := range counts {
		h.Count += c
		h.Bounds = append(h.Bounds, math.Pow(10, float64(i-3)))
		h.Cumulative = append(h.Cumulative, h.Count)
	}
	return h
}

// TestLateWindow: the lateness shown is that of the deliveries since a
// reading a minute or more old, once there is one; before, since the start.
func TestLateWindow(t *testing.T) {
	var w lateWindow
	t0 := time.Unix(1_700_000_000, 0)
	// 100 deliveries 1 ms late at the start.
	h, over := w.recent(hist(100, 0, 0, 0), t0)
	if over != "since the start" || h.Quantile(0.99) != 0.001 {
		t.Fatalf("first reading: %s p99 %v", over, h.Quantile(0.99))
	}
	// A minute later 10 more, 1 s late: those only.
	h, over = w.recent(hist(100, 0, 0, 10), t0.Add(61*time.Second))
	if over != "of the last 1m1s" || h.Count != 10 || h.Quantile(0.5) != 1 {
		t.Fatalf("window %s: count %d p50 %v", over, h.Count, h.Quantile(0.5))
	}
	// Another minute and 5 more: those since the 61 s reading.
	h, over = w.recent(hist(100, 0, 0, 15), t0.Add(122*time.Second))
	if over != "of the last 1m1s" || h.Count != 5 || h.Quantile(0.5) != 1 || h.MaxBound() != 1 {
		t.Fatalf("window %s: count %d p50 %v max %v", over, h.Count, h.Quantile(0.5), h.MaxBound())
	}
	// Nothing delivered since: back to everything since the start.
	if _, over = w.recent(hist(100, 0, 0, 10), t0.Add(123*time.Second)); over != "since the start" {
		t.Fatalf("no new deliveries: %s", over)
	}
	if !math.IsNaN(hist(0, 0).Quantile(0.5)) {
		t.Fatal("empty histogram has a quantile")
	}
}
