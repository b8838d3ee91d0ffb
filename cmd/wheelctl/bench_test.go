package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

func TestBenchProduceJSON(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	tests := []struct {
		name    string
		args    []string
		results int
		latency bool
	}{
		{"sync", []string{"--mode", "sync", "--producers", "2"}, 1, true},
		{"sync, shared client", []string{"--mode", "sync", "--producers", "4", "--clients", "1"}, 1, true},
		{"async with peer", []string{"--mode", "async", "--window", "16", "--peer"}, 2, true},
		{"oneway", []string{"--mode", "oneway"}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRun(t, append([]string{"bench", "produce", ns, "--count", "300", "--json"}, tt.args...)...)
			var rep benchReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("--json does not parse: %v\n%s", err, out)
			}
			if rep.Kind != "produce" || rep.Count != 300 || rep.Size != 256 || len(rep.Results) != tt.results {
				t.Fatalf("report %+v", rep)
			}
			w := rep.Results[len(rep.Results)-1]
			if w.Target != "wheelmq" || w.Messages != 300 || w.Errors != 0 || w.MsgsPerSec <= 0 || w.MBPerSec <= 0 || w.ElapsedS <= 0 {
				t.Errorf("wheelmq result %+v", w)
			}
			if l := w.Latency; (l != nil) != tt.latency || (l != nil && !(0 <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max)) {
				t.Errorf("latency %+v, want present: %v", l, tt.latency)
			}
			if tt.results == 2 && (rep.Results[0].Target != "ack-only peer" || rep.RatioToPeer == nil || *rep.RatioToPeer <= 0) {
				t.Errorf("peer: %+v ratio %v", rep.Results[0], rep.RatioToPeer)
			}
			// The raw JSON carries the documented field names.
			for _, key := range []string{`"msgs_per_sec"`, `"latency_ms"`, `"errors"`, `"mode"`} {
				if (key != `"latency_ms"` || tt.latency) && !strings.Contains(out, key) {
					t.Errorf("JSON lacks %s", key)
				}
			}
		})
	}
}

func TestBenchProduceTable(t *testing.T) {
	n := startNode(t, processtest.Options{})
	out := mustRun(t, "bench", "produce", "--namesrv="+n.NamesrvAddr(), "--count", "100")
	if !strings.Contains(out, "bench produce: 256-byte bodies, 1 producer(s) on 1 client(s), sync, 100 messages") {
		t.Errorf("headline:\n%s", out)
	}
	rows := rowsOf(out, "wheelmq")
	if len(rows) != 1 || rows[0][1] != "100" || rows[0][2] != "0" || len(rows[0]) != 9 {
		t.Errorf("table:\n%s", out)
	}
}

func TestBenchConsumeJSON(t *testing.T) {
	n := startNode(t, processtest.Options{})
	out := mustRun(t, "bench", "consume", "--namesrv="+n.NamesrvAddr(), "--count", "200", "--json")
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json does not parse: %v\n%s", err, out)
	}
	if rep.Kind != "consume" || len(rep.Results) != 2 {
		t.Fatalf("report %+v", rep)
	}
	p, c := rep.Results[0], rep.Results[1]
	if p.Messages != 200 || p.Errors != 0 || c.Messages != 200 || c.Errors != 0 || c.Latency == nil || c.MsgsPerSec <= 0 {
		t.Errorf("producers %+v, consumer %+v", p, c)
	}
}

// TestBenchRedeliveryJSON is the short run of `task bench:redelivery`:
// every message comes back once after its invisibility deadline, none
// early, against the in-process broker.
func TestBenchRedeliveryJSON(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("waits out a 10 s invisible time")
	}
	out := mustRun(t, "bench", "redelivery", "--count", "20", "--receivers", "4", "--drain", "10s", "--json")
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json does not parse: %v\n%s", err, out)
	}
	if rep.Kind != "redelivery" || len(rep.Results) != 1 {
		t.Fatalf("report %+v", rep)
	}
	r := rep.Results[0]
	if r.Messages != 20 || r.Errors != 0 || r.Latency == nil || r.FirstError != "" {
		t.Fatalf("result %+v", r)
	}
}
