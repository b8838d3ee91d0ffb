package console

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Rates of the fake: msgs_in at 2/s then 4/s over the last two intervals,
// two pending timers.
func (f *fake) Rates(context.Context) (Rates, error) {
	now := time.Now()
	return Rates{Every: 10 * time.Second, Size: 361, Series: []RateSeries{
		{Name: "msgs_in", Points: []RatePoint{{now.Add(-10 * time.Second), 2}, {now, 4}}},
		{Name: "timers_pending", Gauge: true, Points: []RatePoint{{now, 2}}},
	}}, nil
}

// TestRateChartPoints: each point is drawn at its time over the hour
// ending at End and at its value over a round maximum; points outside the
// hour are left out.
func TestRateChartPoints(t *testing.T) {
	end := time.Unix(1_800_000_000, 0)
	s := RateSeries{Name: "msgs_in", Points: []RatePoint{
		{end.Add(-61 * time.Minute), 999}, // older than the hour: not drawn, not in the scale
		{end.Add(-time.Hour), 0}, {end.Add(-30 * time.Minute), 4.5}, {end, 9}}}
	svg := string(lineSVG(rateChart{ID: "c", Title: "in", End: end, Lines: []chartLine{{"client sends", s}}}))
	m := regexp.MustCompile(`data-series="msgs_in" data-values="([^"]*)" points="([^"]*)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no polyline in %s", svg)
	}
	if m[1] != "0 4.5 9" {
		t.Errorf("values %q, want the three points of the hour", m[1])
	}
	// x: 44 + 408*f; y: 10 + 118*(1-v/10), the scale's maximum being 10.
	if want := "44.0,128.0 248.0,74.9 452.0,21.8"; m[2] != want {
		t.Errorf("points %q, want %q", m[2], want)
	}
	if !strings.Contains(svg, `data-max="10"`) || !strings.Contains(svg, ">-30m<") || !strings.Contains(svg, ">now<") {
		t.Errorf("scale maximum or time ticks: %s", svg)
	}
	// A shorter window (the rings' span when sampling faster): the same
	// point halfway at 4 s of 8 s.
	svg = string(lineSVG(rateChart{ID: "c", End: end, Window: 8 * time.Second,
		Lines: []chartLine{{"x", RateSeries{Name: "x", Points: []RatePoint{{end.Add(-9 * time.Second), 1}, {end.Add(-4 * time.Second), 1}}}}}}))
	if !strings.Contains(svg, `data-values="1" points="248.0,10.0"`) || !strings.Contains(svg, ">-4.0s<") {
		t.Errorf("8 s window: %s", svg)
	}
	for v, want := range map[float64]float64{0: 1, 0.3: 1, 1.5: 2, 3: 5, 7: 10, 10: 10, 11: 20, 4200: 5000} {
		if got := niceMax(v); got != want {
			t.Errorf("niceMax(%v) = %v, want %v", v, got, want)
		}
	}
}

// TestRatesAPIAndCharts: GET /api/rates gives the series as JSON to a
// reader (401 before a login under ACL), and the Overview draws the
// charts.
func TestRatesAPIAndCharts(t *testing.T) {
	srv, cl := serve(t, newFake(false, 1))
	code, body, h := get(t, cl, srv.URL+"/api/rates")
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /api/rates: %d %s", code, body)
	}
	var got ratesJSON
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.EverySeconds != 10 || got.Readings != 361 || len(got.Series) != 2 || got.Series[0].Name != "msgs_in" ||
		got.Series[0].Unit != "per second" || len(got.Series[0].Points) != 2 || got.Series[0].Points[1][1] != 4 ||
		got.Series[1].Unit != "count" {
		t.Fatalf("/api/rates: %s", body)
	}
	code, body, _ = get(t, cl, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("overview: %d", code)
	}
	for _, id := range []string{`id="chart-in"`, `id="chart-out"`, `id="chart-fired"`, `id="chart-pending"`,
		`data-series="msgs_in" data-values="2 4"`, `data-series="timers_pending" data-values="2"`} {
		if !strings.Contains(body, id) {
			t.Errorf("overview lacks %s", id)
		}
	}

	srv, cl = serve(t, newFake(true, 1))
	if code, _, _ := get(t, cl, srv.URL+"/api/rates"); code != http.StatusUnauthorized {
		t.Fatalf("GET /api/rates without a login: %d", code)
	}
}
