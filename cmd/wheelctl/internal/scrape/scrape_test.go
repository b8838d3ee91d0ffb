package scrape

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const page = `# HELP wheelmq_actor_messages_total Messages processed by the stage.
# TYPE wheelmq_actor_messages_total counter
wheelmq_actor_messages_total{stage="commitlog"} 10
wheelmq_actor_messages_total{stage="pull"} 5
# TYPE wheelmq_timer_pending gauge
wheelmq_timer_pending 1.2e+07
# TYPE lat histogram
lat_bucket{stage="a",le="0.1"} 1
lat_bucket{stage="a",le="1"} 3
lat_bucket{stage="a",le="+Inf"} 4
lat_sum{stage="a"} 5.5
lat_count{stage="a"} 4
lat_bucket{stage="b",le="0.1"} 2
lat_bucket{stage="b",le="1"} 2
lat_bucket{stage="b",le="+Inf"} 2
lat_sum{stage="b"} 0.1
lat_count{stage="b"} 2
`

func parse(t *testing.T, text string) *Snapshot {
	t.Helper()
	s, err := Parse([]byte(text), time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValue(t *testing.T) {
	s := parse(t, page)
	tests := []struct {
		name string
		sel  []string
		want float64
		ok   bool
	}{
		{"wheelmq_actor_messages_total", nil, 15, true},
		{"wheelmq_actor_messages_total", []string{"stage", "pull"}, 5, true},
		{"wheelmq_actor_messages_total", []string{"stage", "nope"}, 0, false},
		{"wheelmq_timer_pending", nil, 12e6, true},
		{"lat", []string{"stage", "a"}, 4, true},
		{"missing", nil, 0, false},
	}
	for _, tt := range tests {
		got, ok := s.Value(tt.name, tt.sel...)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s%v: got %v %v, want %v %v", tt.name, tt.sel, got, ok, tt.want, tt.ok)
		}
	}
	if got := s.LabelValues("wheelmq_actor_messages_total", "stage"); strings.Join(got, ",") != "commitlog,pull" {
		t.Errorf("label values %v", got)
	}
	if !s.Has("lat") || s.Has("missing") {
		t.Error("Has")
	}
}

func TestHistogramQuantile(t *testing.T) {
	s := parse(t, page)
	all, ok := s.Histogram("lat")
	if !ok || all.Count != 6 || all.Sum != 5.6 || len(all.Buckets) != 3 {
		t.Fatalf("summed histogram %+v", all)
	}
	a, _ := s.Histogram("lat", "stage", "a")
	tests := []struct {
		h    Histogram
		q    float64
		want float64
	}{
		{a, 0.25, 0.1},                // rank 1: the first bucket's bound
		{a, 0.5, 0.1 + 0.9*(2-1)/2.0}, // rank 2: half-way through (0.1, 1]
		{a, 0.99, 1},                  // rank 3.96: +Inf bucket -> highest finite bound
		{all, 0.5, 0.1},               // rank 3 of 6: all of stage b and one of a are <= 0.1
	}
	for _, tt := range tests {
		if got := tt.h.Quantile(tt.q); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("q%v of %+v = %v, want %v", tt.q, tt.h, got, tt.want)
		}
	}
	if !math.IsNaN((Histogram{}).Quantile(0.5)) {
		t.Error("empty histogram should give NaN")
	}
}

func TestHistogramSub(t *testing.T) {
	prev := parse(t, page)
	later := strings.NewReplacer(`le="1"} 3`, `le="1"} 13`, `stage="a",le="+Inf"} 4`, `stage="a",le="+Inf"} 14`,
		`lat_count{stage="a"} 4`, `lat_count{stage="a"} 14`).Replace(page)
	cur := parse(t, later)
	p, _ := prev.Histogram("lat", "stage", "a")
	c, _ := cur.Histogram("lat", "stage", "a")
	d := c.Sub(p)
	if d.Count != 10 || d.Buckets[0].Count != 0 || d.Buckets[1].Count != 10 {
		t.Fatalf("delta %+v", d)
	}
	if got := d.Quantile(0.5); math.Abs(got-0.55) > 1e-12 {
		t.Errorf("median of the delta %v, want 0.55", got)
	}
	if r := p.Sub(c); r.Count != p.Count {
		t.Errorf("a reset should give the later reading, got %+v", r)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"metric{ 1\n", "# TYPE x counter\nx abc\n"} {
		if _, err := Parse([]byte(bad), time.Now()); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(page))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := Fetch(ctx, srv.Client(), srv.URL+"/metrics")
	if err != nil || !s.Has("wheelmq_timer_pending") {
		t.Fatalf("fetch: %v", err)
	}
	if _, err := Fetch(ctx, srv.Client(), srv.URL+"/nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("404 page: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(page))
	f.Add([]byte("x_bucket{le=\"1\"} 1\nx_bucket{le=\"+Inf\"} 0\nx_count 0\n"))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"NaN\"} 3\nh_count 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b, time.Unix(0, 0))
		if err != nil {
			return
		}
		for _, n := range s.Names() {
			s.Value(n)
			if h, ok := s.Histogram(n); ok {
				for _, q := range []float64{0, 0.5, 0.99, 1} {
					h.Quantile(q) // must not panic
				}
				h.Sub(h)
			}
		}
	})
}
