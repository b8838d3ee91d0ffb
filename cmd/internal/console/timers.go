package console

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// timeRange is one of the timer page's histograms: bars of width Step
// over Span from now.
type timeRange struct {
	Key, Label string
	Span, Step time.Duration
	Tick       func(time.Duration) string // bar label
}

// ranges are the timer page's views: minute, hour, day, month, year.
var ranges = []timeRange{
	{"minute", "next minute", time.Minute, time.Second, func(d time.Duration) string { return strconv.Itoa(int(d/time.Second)) + "s" }},
	{"hour", "next hour", time.Hour, time.Minute, func(d time.Duration) string { return strconv.Itoa(int(d/time.Minute)) + "m" }},
	{"day", "next day", 24 * time.Hour, time.Hour, func(d time.Duration) string { return strconv.Itoa(int(d/time.Hour)) + "h" }},
	{"month", "next 30 days", 30 * 24 * time.Hour, 24 * time.Hour, func(d time.Duration) string { return strconv.Itoa(int(d/(24*time.Hour))) + "d" }},
	{"year", "next year", 365 * 24 * time.Hour, 7 * 24 * time.Hour, func(d time.Duration) string { return "w" + strconv.Itoa(int(d/(7*24*time.Hour))) }},
}

func rangeOf(key string) timeRange {
	for _, r := range ranges {
		if r.Key == key {
			return r
		}
	}
	return ranges[1]
}

// timersData is the timer page.
type timersData struct {
	T       Timers
	Range   timeRange
	Ranges  []timeRange
	Bars    []bar
	Beyond  int64 // pending past the range
	InRange int64
	Totals  []rangeTotal // pending within each range
}

// rangeTotal is how many timers are due within one range.
type rangeTotal struct {
	Label string
	Count int64
}

// edgesFor is the histogram edges (ms) of r: one per bar, plus the range
// ends of the shorter ranges for the totals.
func edgesFor(r timeRange) []int64 {
	var e []int64
	for d := r.Step; d <= r.Span; d += r.Step {
		e = append(e, d.Milliseconds())
	}
	return e
}

func (c *Console) timersPage(ctx context.Context, r *http.Request, _ session, v *view) error {
	v.Title, v.Page = "Timers", "timers"
	rg := rangeOf(r.URL.Query().Get("range"))
	d := &timersData{Range: rg, Ranges: ranges}
	v.Data = d
	t, err := c.timers(ctx, rg)
	if err != nil {
		return err
	}
	d.T = t
	d.Bars, d.InRange, d.Beyond = barsOf(t.Counts, rg)
	// Totals per range, from this histogram where it covers them and from
	// a second, coarse one for the others.
	tot, err := c.b.Timers(ctx, rangeEnds())
	if err != nil {
		return err
	}
	var acc int64
	for i, r := range ranges {
		acc += tot.Counts[i]
		d.Totals = append(d.Totals, rangeTotal{Label: r.Label, Count: acc})
	}
	return nil
}

// timers asks the backend for rg's histogram.
func (c *Console) timers(ctx context.Context, rg timeRange) (Timers, error) {
	return c.b.Timers(ctx, edgesFor(rg))
}

// rangeEnds are the ranges' spans in ms.
func rangeEnds() []int64 {
	e := make([]int64, len(ranges))
	for i, r := range ranges {
		e[i] = r.Span.Milliseconds()
	}
	return e
}

// bar is one histogram bar.
type bar struct {
	Label string
	Count int64
	From  time.Duration
}

// barsOf turns counts by edgesFor(rg) into bars; the last count is past
// the range.
func barsOf(counts []int64, rg timeRange) (bars []bar, in, beyond int64) {
	if len(counts) == 0 {
		return nil, 0, 0
	}
	n := len(counts) - 1
	bars = make([]bar, 0, n)
	for i := range n {
		from := time.Duration(i) * rg.Step
		bars = append(bars, bar{Label: rg.Tick(from), Count: counts[i], From: from})
		in += counts[i]
	}
	return bars, in, counts[n]
}
