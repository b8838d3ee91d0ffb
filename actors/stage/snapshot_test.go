package stage_test

import (
	"testing"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// TestSnapshotIsMetrics: Registry.Snapshot, which the console reads, gives
// the numbers /metrics exports for every stage: depth, messages,
// restarts, up, and the processing histogram's count.
func TestSnapshotIsMetrics(t *testing.T) {
	e := newEnv(t)
	done := make(chan string, 10)
	s := e.spawn(t, "snap", done)
	s.Send(&crash{})
	for range 4 {
		s.Send(&job{id: "j"})
	}
	for range 4 {
		recv(t, done, "enter j")
	}
	eventually(t, "four messages counted", func() bool {
		return sample(t, e.reg, "wheelmq_actor_messages_total", "snap") == 4
	})
	var got *stage.Snapshot
	for _, sn := range e.metrics.Snapshot() {
		if sn.Name == "snap" {
			got = &sn
		}
	}
	if got == nil {
		t.Fatal("no snapshot of the stage")
	}
	for name, v := range map[string]float64{
		"wheelmq_actor_mailbox_depth":   float64(got.Depth),
		"wheelmq_actor_messages_total":  float64(got.Messages),
		"wheelmq_actor_restarts_total":  float64(got.Restarts),
		"wheelmq_actor_process_seconds": float64(got.Seconds.Count),
	} {
		if m := sample(t, e.reg, name, "snap"); m != v {
			t.Errorf("%s: /metrics %v, snapshot %v", name, m, v)
		}
	}
	if !got.Up || got.Messages != 4 || got.Restarts != 1 || got.Depth != 0 {
		t.Errorf("snapshot %+v, want up, 4 messages, 1 restart, depth 0", *got)
	}
	if sample(t, e.reg, "wheelmq_stage_up", "snap") != 1 {
		t.Error("/metrics says the stage is down")
	}
	e.metrics.Retire(s.Name(), "test")
	for _, sn := range e.metrics.Snapshot() {
		if sn.Name == "snap" && sn.Up {
			t.Error("a retired stage is up in the snapshot")
		}
	}
	if sample(t, e.reg, "wheelmq_stage_up", "snap") != 0 {
		t.Error("a retired stage is up in /metrics")
	}
}
