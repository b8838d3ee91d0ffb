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

// The recorded pages were read 1.04 s apart from a broker (go run
// ./cmd/wheelmq) running a timer benchmark (spread, 200k timers) and a sync
// send benchmark (16 producers).
var (
	firstAt  = time.Date(2026, 11, 30, 11, 43, 32, 110e6, time.UTC)
	secondAt = firstAt.Add(1040 * time.Millisecond)
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
	if v.Interval != 1040*time.Millisecond {
		t.Fatalf("interval %v", v.Interval)
	}
	dt := v.Interval.Seconds()
	// wheelmq_timer_delivered_total 63087 -> 88596.
	near("delivered/s", v.Timers.DeliveredRate, (88596-63087)/dt, 1e-6)
	near("enqueued/s", v.Timers.EnqueuedRate, 0, 1e-9)
	near("pending", v.Timers.Pending, 100875, 0)
	// wheelmq_store_commitlog_bytes 153900584 -> 172944619.
	near("write rate", v.Store.WriteRate, (172944619-153900584)/dt, 1e-6)
	near("dispatch lag", v.Store.Lag, 0, 0)
	if !math.IsNaN(v.Timers.DueNextMinute) {
		t.Errorf("due next minute %v, want NaN: the broker does not export it", v.Timers.DueNextMinute)
	}
	// 25509 write-backs in the interval: 20113 within 100 ms, all within
	// 250 ms; the p99 rank 25253.91 is interpolated inside (0.1 s, 0.25 s].
	near("lateness p99", v.Timers.LatenessP99, 0.1+0.15*(0.99*25509-20113)/(25509-20113), 1e-12)
	// Requests: code 10 (SEND_MESSAGE) 2530 -> 8300, code 11 (PULL) 406 -> 1285,
	// code 310 unchanged at 200000.
	if b := v.Traffic.Busiest; len(b) != 2 || b[0].Code != "10" || b[1].Code != "11" {
		t.Fatalf("busiest codes %+v", b)
	}
	near("code 10/s", v.Traffic.Busiest[0].Rate, (8300-2530)/dt, 1e-6)
	if v.Healthy != 1 || !v.HasTraffic {
		t.Errorf("healthy %v, traffic %v", v.Healthy, v.HasTraffic)
	}
	if len(v.Stages) != 13 || v.Stages[0].Name != "commitlog" || v.Stages[11].Name != "dequeue_put" || v.Stages[12].Name != "namesrv" {
		t.Fatalf("stages in pipeline order expected, got %+v", v.Stages)
	}
	for _, s := range v.Stages {
		if math.IsNaN(s.Rate) || s.Rate < 0 || math.IsNaN(s.Busy) || s.Busy < 0 || s.Busy > 1 || s.Down {
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

// TestRenderStageDown marks a stage stopped for good and an unhealthy
// broker.
func TestRenderStageDown(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "metrics-2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(`wheelmq_stage_up{stage="dispatch"} 1`, `wheelmq_stage_up{stage="dispatch"} 0`,
		"wheelmq_broker_healthy 1", "wheelmq_broker_healthy 0").Replace(string(b))
	cur, err := scrape.Parse([]byte(text), secondAt)
	if err != nil {
		t.Fatal(err)
	}
	out := Render(Build(load(t, "metrics-1.txt", firstAt), cur), 100)
	if !strings.Contains(out, "UNHEALTHY") {
		t.Errorf("header does not say unhealthy:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "dispatch ") && !strings.Contains(l, "DOWN") {
			t.Errorf("dispatch row does not say DOWN: %q", l)
		}
		if strings.HasPrefix(l, "pull ") && strings.Contains(l, "DOWN") {
			t.Errorf("pull row says DOWN: %q", l)
		}
	}
}
