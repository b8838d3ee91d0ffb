package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/history"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestChaosWorkloadSmoke runs the chaos workload (producers with timers
// and cancels, push consumers, the JSONL history) against one standalone
// wheelmq process without faults: the checker must find a clean history
// with timers delivered and cancels confirmed. It proves the harness itself
// (keys, queue offsets, the cancel path, the checker's rules) before the
// replicated cluster exists.
func TestChaosWorkloadSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProc(t, bin, dir, "--flush", "sync")
	topic := processtest.Unique("chaos_smoke")
	resp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic: code %d %s", resp.Code, resp.Remark)
	}
	processtest.WaitRoute(t, p.namesrv, topic)
	rec, err := history.NewRecorder(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	w := &workload{t: t, rec: rec, namesrv: []string{p.namesrv}, topic: topic, group: processtest.Unique("chaos-cg"),
		seed: 1, Producers: 2, Rate: 20, TimerShare: 0.3, CancelShare: 0.5, MaxDue: 6 * time.Second}
	processtest.QuietClient()
	w.startConsumers(1)
	w.startProducers()
	time.Sleep(4 * time.Second)
	w.stopProducers()
	w.mu.Lock()
	drainUntil := time.UnixMilli(w.lastDue).Add(15 * time.Second)
	w.mu.Unlock()
	for time.Now().Before(drainUntil) && drained(rec.Ops()) > 0 {
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	r := history.Check(rec.Ops(), history.Options{LateBoundMs: 5000})
	t.Logf("history: %s", r)
	for _, v := range r.Violations(history.Options{LateBoundMs: 5000}) {
		t.Errorf("violation: %s", v)
	}
	var timers, cancels int
	for _, op := range rec.Ops() {
		if op.F == history.FSend && op.Type == history.Invoke && op.Timer {
			timers++
		}
		if op.F == history.FCancel && op.Type == history.OK {
			cancels++
		}
	}
	if r.OK < 100 || timers == 0 || cancels == 0 || r.Lateness.N == 0 {
		t.Fatalf("workload too thin: %d ok, %d timers, %d confirmed cancels, %d timers delivered", r.OK, timers, cancels, r.Lateness.N)
	}
}
