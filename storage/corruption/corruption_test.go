package corruption

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
		ok   bool
	}{
		{"skip", PolicySkip, true},
		{"STOP", PolicyStop, true},
		{" stop ", PolicyStop, true},
		{"", PolicySkip, false},
		{"halt", PolicySkip, false},
	} {
		got, err := ParsePolicy(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParsePolicy(%q) = %v, %v", tc.in, got, err)
		}
		if !tc.ok && !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("ParsePolicy(%q) error %v does not wrap ErrInvalidPolicy", tc.in, err)
		}
		var p Policy
		if err := p.Set(tc.in); (err == nil) != tc.ok || p.String() != tc.want.String() {
			t.Errorf("Set(%q) = %v, %v", tc.in, p, err)
		}
	}
	if PolicySkip.String() != "skip" || PolicyStop.String() != "stop" {
		t.Error("policy names")
	}
}

// TestReportCountsOncePerRange reports the same range twice and two others:
// the counter and the log see each range's bytes once.
func TestReportCountsOncePerRange(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	r := Range{File: FileCommitLog, Path: "/d/commitlog", From: 100, To: 204, Reason: "checksum", Action: "skipped"}
	if !m.Report(log, r) || m.Report(log, r) {
		t.Fatal("first report not new, or second report new")
	}
	m.Report(log, Range{File: FileCommitLog, Path: "/d/commitlog", From: 300, To: 340})
	m.Report(log, Range{File: FileTimerLog, Path: "/d/timer", From: 100, To: 189})
	if got := gathered(t, reg, FileCommitLog); got != 144 {
		t.Fatalf("commitlog bytes %v, want 144", got)
	}
	if got := m.Counted(FileTimerLog); got != 89 {
		t.Fatalf("timerlog bytes %d, want 89", got)
	}
	if got := gathered(t, reg, FileConsumeQueue); got != 0 {
		t.Fatalf("consumequeue bytes %v, want 0", got)
	}
	out := buf.String()
	if strings.Count(out, `"level":"error"`) != 3 || !strings.Contains(out, `"from":100,"to":204,"bytes":104`) {
		t.Fatalf("log: %s", out)
	}
	var nilM *Metrics
	if !nilM.Report(zerolog.Nop(), r) || nilM.Counted(FileCommitLog) != 0 {
		t.Fatal("nil metrics")
	}
}

// gathered returns the registered counter's value for file.
func gathered(t *testing.T, reg *prometheus.Registry, file string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wheelmq_store_corrupt_bytes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "file" && l.GetValue() == file {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no sample for file %q", file)
	return 0
}
