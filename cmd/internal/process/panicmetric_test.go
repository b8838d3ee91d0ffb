package process_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// gatherPanics reads wheelmq_handler_panics_total{protocol,kind} from a
// registry's gather (0: no such series).
func gatherPanics(t *testing.T, gather func() ([]*dto.MetricFamily, error), protocol, kind string) float64 {
	t.Helper()
	mfs, err := gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wheelmq_handler_panics_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["protocol"] == protocol && labels["kind"] == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
