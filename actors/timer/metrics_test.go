package timer

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wheelmq/wheelmq/timerwheel"
)

// TestSkipReasonsListed: every reason the stages can report is
// pre-registered, so the label set is known from the start.
func TestSkipReasonsListed(t *testing.T) {
	re := regexp.MustCompile(`(?:return [^\n,]+, |reason = )"([a-z_]+)"`)
	found := 0
	for _, file := range []string{"convert.go", "enqueue.go", "dequeue.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			found++
			if !slices.Contains(SkipReasons, m[1]) {
				t.Errorf("%s reports skip reason %q, missing from SkipReasons", file, m[1])
			}
		}
	}
	if found < 5 {
		t.Fatalf("found only %d reasons in the sources: the pattern is stale", found)
	}
	for _, raw := range [][]byte{nil, []byte("garbage")} {
		if _, reason := rebuild(raw, timerwheel.Timer{}, 0); !slices.Contains(SkipReasons, reason) {
			t.Errorf("rebuild(%q) reason %q", raw, reason)
		}
	}
	if _, reason := timerOf([]byte("garbage"), 0, 0); !slices.Contains(SkipReasons, reason) {
		t.Errorf("timerOf(garbage) reason %q", reason)
	}
}

// TestMetricsPreRegistered: the skipped and duplicates series exist at 0
// before any event.
func TestMetricsPreRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string][]string{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[f.GetName()] = append(labels[f.GetName()], l.GetValue())
			}
			if c := m.GetCounter(); c != nil && c.GetValue() != 0 {
				t.Errorf("%s starts at %v", f.GetName(), c.GetValue())
			}
		}
	}
	for name, want := range map[string][]string{
		"wheelmq_timer_skipped_total": SkipReasons, "wheelmq_timer_duplicates_total": DuplicateOutcomes,
	} {
		got := labels[name]
		if len(got) != len(want) {
			t.Errorf("%s has labels %v, want %v", name, got, want)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
}
