package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RatesBackend is the broker's rates over the last hour, sampled in the
// broker (actors/rates): the Overview's charts and GET /api/rates.
type RatesBackend interface {
	// Rates are the series kept, oldest point first.
	Rates(ctx context.Context) (Rates, error)
}

// Rates are the series of the last hour.
type Rates struct {
	Every  time.Duration // sampling period
	Size   int           // readings kept (Size-1 rates per series)
	Series []RateSeries
}

// RateSeries is one series: a rate per second over each interval between
// readings (stamped with its end), or a gauge's value at each reading.
// Names: msgs_in, internal_in, out_pull, out_pop, bytes_in, bytes_out,
// timers_fired, pop_deadlines, timers_pending, pop_inflight, connections,
// stage:<name>.
type RateSeries struct {
	Name   string
	Gauge  bool
	Points []RatePoint
}

// RatePoint is one point of a series.
type RatePoint struct {
	At time.Time
	V  float64
}

// find returns the series named name (empty when absent).
func (r Rates) find(name string) RateSeries {
	for _, s := range r.Series {
		if s.Name == name {
			return s
		}
	}
	return RateSeries{Name: name}
}

// ratesJSON is GET /api/rates: points as [unix ms, value] pairs.
type ratesJSON struct {
	EverySeconds float64          `json:"every_seconds"`
	Readings     int              `json:"readings"`
	Series       []rateSeriesJSON `json:"series"`
}

type rateSeriesJSON struct {
	Name   string       `json:"name"`
	Unit   string       `json:"unit"`
	Points [][2]float64 `json:"points"`
}

// unitOf is a series' unit.
func unitOf(s RateSeries) string {
	switch {
	case s.Gauge:
		return "count"
	case strings.HasPrefix(s.Name, "bytes_"):
		return "bytes/s"
	default:
		return "per second"
	}
}

// ratesAPI serves GET /api/rates to a session that may read (401 without
// one, 403 without SUB or admin), as JSON.
func (c *Console) ratesAPI(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.reader(w, r, true); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	rs, err := c.b.Rates(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	out := ratesJSON{EverySeconds: rs.Every.Seconds(), Readings: rs.Size, Series: make([]rateSeriesJSON, 0, len(rs.Series))}
	for _, s := range rs.Series {
		js := rateSeriesJSON{Name: s.Name, Unit: unitOf(s), Points: make([][2]float64, 0, len(s.Points))}
		for _, p := range s.Points {
			js.Points = append(js.Points, [2]float64{float64(p.At.UnixMilli()), p.V})
		}
		out.Series = append(out.Series, js)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		c.log.Warn().Err(err).Msg("console: write /api/rates")
	}
}

// chartLine is one line of a chart and its legend.
type chartLine struct {
	Label  string
	Series RateSeries
}

// rateChart is one chart of the Overview.
type rateChart struct {
	ID, Title, Unit string
	Lines           []chartLine
	End             time.Time     // the right edge
	Window          time.Duration // the span shown before End (0: an hour)
}

// overviewCharts are the Overview's charts from rs, the window ending at
// now (or at the latest reading, when it is later).
// The window is what the rings hold: Size-1 intervals of Every (an hour
// by default).
func overviewCharts(rs Rates, now time.Time) []rateChart {
	for _, s := range rs.Series {
		if n := len(s.Points); n > 0 && s.Points[n-1].At.After(now) {
			now = s.Points[n-1].At
		}
	}
	win := rs.Every * time.Duration(max(rs.Size-1, 1))
	return []rateChart{
		{ID: "chart-in", Title: "Messages in", Unit: "/s", End: now, Window: win, Lines: []chartLine{
			{"client sends", rs.find("msgs_in")}, {"internal records", rs.find("internal_in")}}},
		{ID: "chart-out", Title: "Messages out", Unit: "/s", End: now, Window: win, Lines: []chartLine{
			{"pull", rs.find("out_pull")}, {"POP and gRPC", rs.find("out_pop")}}},
		{ID: "chart-fired", Title: "Timers fired", Unit: "/s", End: now, Window: win, Lines: []chartLine{
			{"timers written back", rs.find("timers_fired")}, {"POP deadlines", rs.find("pop_deadlines")}}},
		{ID: "chart-pending", Title: "Timers pending", End: now, Window: win, Lines: []chartLine{
			{"waiting in the wheel", rs.find("timers_pending")}}},
	}
}

// spanText says what the rings span: "60 minutes", "9.0 seconds".
func spanText(rs Rates) string {
	d := rs.Every * time.Duration(max(rs.Size-1, 1))
	if d >= 2*time.Minute {
		return strconv.FormatFloat(d.Minutes(), 'f', -1, 64) + " minutes"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " seconds"
}

// window is the span the chart shows.
func (c rateChart) window() time.Duration {
	if c.Window <= 0 {
		return time.Hour
	}
	return c.Window
}

// inWindow reports whether p is within the chart's span.
func (c rateChart) inWindow(p RatePoint) bool {
	return !c.End.Before(p.At) && c.End.Sub(p.At) <= c.window()
}

// ago labels a tick d before the right edge ("-15m", "-1.8s").
func ago(d time.Duration) string {
	switch {
	case d == 0:
		return "now"
	case d >= 2*time.Minute:
		return "-" + strconv.FormatFloat(d.Minutes(), 'f', -1, 64) + "m"
	default:
		return "-" + strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
}

// Chart geometry (SVG user units).
const (
	chartW, chartH         = 460.0, 150.0
	chartLeft, chartRight  = 44.0, 8.0
	chartTop, chartBottom  = 10.0, 22.0
	chartPlotW, chartPlotH = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
)

// niceMax rounds v up to 1, 2 or 5 times a power of ten (1 at least).
func niceMax(v float64) float64 {
	if v <= 1 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// chartXY places a point: x over the window ending at end, y from 0 to
// top.
func chartXY(p RatePoint, end time.Time, window time.Duration, top float64) (x, y float64) {
	f := 1 - end.Sub(p.At).Seconds()/window.Seconds()
	x = chartLeft + chartPlotW*math.Min(math.Max(f, 0), 1)
	y = chartTop + chartPlotH*(1-math.Min(math.Max(p.V/top, 0), 1))
	return x, y
}

// lineSVG draws a chart: one polyline per line (its values in data-values,
// for tests and scripts; the latest in the legend), the y axis from 0 to a
// round maximum, the x axis over the last hour.
func lineSVG(c rateChart) template.HTML {
	var b strings.Builder
	top := 0.0
	for _, l := range c.Lines {
		for _, p := range l.Series.Points {
			if c.inWindow(p) {
				top = math.Max(top, p.V)
			}
		}
	}
	top = niceMax(top)
	fmt.Fprintf(&b, `<svg class="rates" id="%s" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s" data-max="%s">`,
		template.HTMLEscapeString(c.ID), chartW, chartH, template.HTMLEscapeString(c.Title), strconv.FormatFloat(top, 'g', -1, 64))
	fmt.Fprintf(&b, `<rect class="plot" x="%.0f" y="%.0f" width="%.0f" height="%.0f"/>`, chartLeft, chartTop, chartPlotW, chartPlotH)
	fmt.Fprintf(&b, `<text class="tick" x="%.0f" y="%.0f" text-anchor="end">%s</text>`, chartLeft-4, chartTop+4, fmtNum(top))
	fmt.Fprintf(&b, `<text class="tick" x="%.0f" y="%.0f" text-anchor="end">0</text>`, chartLeft-4, chartTop+chartPlotH)
	for i := range 5 {
		x, lbl := chartLeft+chartPlotW*float64(i)/4, ago(c.window()*time.Duration(4-i)/4)
		anchor := "middle"
		if i == 4 {
			anchor = "end" // inside the picture
		}
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f"/><text class="tick" x="%.1f" y="%.0f" text-anchor="%s">%s</text>`,
			x, x, chartTop, chartTop+chartPlotH, x, chartH-6, anchor, lbl)
	}
	for i, l := range c.Lines {
		var pts, vals []string
		for _, p := range l.Series.Points {
			if !c.inWindow(p) {
				continue
			}
			x, y := chartXY(p, c.End, c.window(), top)
			pts = append(pts, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
			vals = append(vals, strconv.FormatFloat(p.V, 'g', -1, 64))
		}
		fmt.Fprintf(&b, `<polyline class="line l%d" data-series="%s" data-values="%s" points="%s"><title>%s</title></polyline>`,
			i, template.HTMLEscapeString(l.Series.Name), strings.Join(vals, " "), strings.Join(pts, " "), template.HTMLEscapeString(l.Label))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped names
}

// Last is the line's latest value (NaN: none).
func (l chartLine) Last() float64 {
	if n := len(l.Series.Points); n > 0 {
		return l.Series.Points[n-1].V
	}
	return math.NaN()
}
