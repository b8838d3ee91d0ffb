package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestMedianAndRatio(t *testing.T) {
	rs := func(rates ...int64) []result {
		var out []result
		for _, r := range rates {
			out = append(out, result{acked: r, elapsed: time.Second})
		}
		return out
	}
	tests := []struct {
		a, b  []result
		med   float64
		ratio string
	}{
		{rs(30, 10, 20), rs(10), 20, "2.00x"},
		{rs(5, 1, 4, 2), rs(2), 2, "1.00x"}, // lower middle of an even count
		{rs(7), rs(14), 7, "0.50x"},
		{rs(7), nil, 7, "-"},
	}
	for _, tc := range tests {
		if got := median(tc.a).rate(); got != tc.med {
			t.Errorf("median of %v = %v, want %v", tc.a, got, tc.med)
		}
		if got := ratio(tc.a, tc.b); got != tc.ratio {
			t.Errorf("ratio = %s, want %s", got, tc.ratio)
		}
	}
}

func TestReport(t *testing.T) {
	r := func(rate int64) []result {
		return []result{{acked: rate, elapsed: time.Second, p50: 50 * time.Microsecond, p99: time.Millisecond}}
	}
	res := results{
		"sync":  {"wheelmq": r(15000), "nats": r(10000), "official": r(5000)},
		"async": {"wheelmq": r(100000), "nats": r(100000), "official": r(20000)},
		"timer": {"wheelmq": r(90000), "nats": r(30000), "official": r(10000)},
	}
	var out bytes.Buffer
	report(&out, options{size: 256, window: 256, rounds: 1, duration: time.Second}, machine{natsVersion: "nats-server: v2.15.2"}, res)
	for _, want := range []string{
		"sync publish, 1 publisher", "15.0k/s", "1.50x", "yes", // exactly at the goal
		"async publish, window 256", "1.00x",
		"3.00x", "official/native", "0.33x",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), " no\n") != 1 {
		t.Errorf("want exactly one goal missed (async):\n%s", out.String())
	}
}
