package topview

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wheelmq/wheelmq/cmd/wheelctl/internal/scrape"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The recorded pages were read one second apart from a broker running a
// timer benchmark (spread) and a sync send benchmark.
var (
	firstAt  = time.Date(2026, 11, 30, 11, 36, 43, 0, time.UTC)
	secondAt = firstAt.Add(time.Second)
)

func load(t *testing.T, name string, at time.Time) *scrape.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := scrape.Parse(b, at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRenderGolden(t *testing.T) {
	prev, cur := load(t, "metrics-1.txt", firstAt), load(t, "metrics-2.txt", secondAt)
	tests := []struct {
		name   string
		prev   *scrape.Snapshot
		width  int
		golden string
	}{
		{"two readings, 100 columns", prev, 100, "top-100.golden"},
		{"two readings, 60 columns", prev, 60, "top-60.golden"},
		{"first reading, 80 columns", nil, 80, "top-first-80.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Render(Build(tt.prev, cur), tt.width)
			for i, l := range strings.Split(got, "\n") {
				if n := utf8.RuneCountInString(l); n > tt.width {
					t.Errorf("line %d is %d columns wide, more than %d: %q", i, n, tt.width, l)
				}
			}
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("render differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}

// TestBuildFigures checks the computed figures against values worked out
// by hand from the recorded pages.
func TestBuildFigures(t *testing.T) {
	v := Build(load(t, "metrics-1.txt", firstAt), load(t, "metrics-2.txt", secondAt))
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.IsNaN(got) || math.Abs(got-want) > tol {
			t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
		}
	}
	if v.Interval != time.Second {
		t.Fatalf("interval %v", v.Interval)
	}
	// wheelmq_timer_delivered_total 74567 -> 99688 in one second.
	near("delivered/s", v.Timers.DeliveredRate, 99688-74567, 1e-9)
	near("enqueued/s", v.Timers.EnqueuedRate, 0, 1e-9)
	near("pending", v.Timers.Pending, 99938, 0)
	// wheelmq_store_commitlog_bytes 160869909 -> 177072954.
	near("write rate", v.Store.WriteRate, 177072954-160869909, 1e-6)
	near("dispatch lag", v.Store.Lag, 0, 0)
	if !math.IsNaN(v.Timers.DueNextMinute) {
		t.Errorf("due next minute %v, want NaN: the broker does not export it", v.Timers.DueNextMinute)
	}
	// 25121 write-backs in the interval: 24155 within 5 ms, 25066 within
	// 10 ms; the p99 rank 24869.79 is interpolated inside (5 ms, 10 ms].
	near("lateness p99", v.Timers.LatenessP99, 0.005+0.005*(0.99*25121-24155)/(25066-24155), 1e-12)
	if len(v.Stages) != 12 || v.Stages[0].Name != "commitlog" || v.Stages[11].Name != "dequeue_put" {
		t.Fatalf("stages in pipeline order expected, got %+v", v.Stages)
	}
	for _, s := range v.Stages {
		if math.IsNaN(s.Rate) || s.Rate < 0 || math.IsNaN(s.Busy) || s.Busy < 0 || s.Busy > 1 {
			t.Errorf("stage %s: rate %v busy %v", s.Name, s.Rate, s.Busy)
		}
	}
}

func TestBuildNotWheelmq(t *testing.T) {
	s, err := scrape.Parse([]byte("# TYPE up gauge\nup 1\n"), secondAt)
	if err != nil {
		t.Fatal(err)
	}
	out := Render(Build(nil, s), 80)
	if !strings.Contains(out, "none of wheelmq's metrics") {
		t.Fatalf("want a hint for a foreign page:\n%s", out)
	}
}

// TestBuildRestart checks that counters going backwards (a broker restart
// between readings) give unknown rates, not negative ones.
func TestBuildRestart(t *testing.T) {
	v := Build(load(t, "metrics-2.txt", firstAt), load(t, "metrics-1.txt", secondAt))
	if !math.IsNaN(v.Timers.DeliveredRate) {
		t.Errorf("delivered/s %v after a reset, want unknown", v.Timers.DeliveredRate)
	}
	if v.Store.WriteRate != 0 {
		t.Errorf("write rate %v when the CommitLog shrank, want 0", v.Store.WriteRate)
	}
}
