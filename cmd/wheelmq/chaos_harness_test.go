package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/cluster"
	"github.com/wheelmq/wheelmq/cmd/internal/chaos/history"
	"github.com/wheelmq/wheelmq/cmd/internal/chaos/proxy"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestChaosHarness runs the harness on what exists without replication:
// three plain name servers and one standalone broker (sync flush) reached
// only through the chaos proxies (its --namesrv list and --advertise
// address). Under the workload it blackholes the broker from everyone,
// heals, SIGKILLs it and restarts it on the same dir: the name servers
// route the proxy address, no send is acknowledged inside the blackhole
// (the client's sends wait in it and complete after the heal), and the
// history checks clean (nothing acknowledged lost, no early or
// cancelled timer, queue offsets unique).
func TestChaosHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	c := cluster.Start(t, cluster.Config{Bin: bin, Dir: dir, Groups: 1, Replicas: 1, NoReplication: true,
		BrokerArgs: []string{"--flush", "sync"},
		Log:        zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	g := c.Groups[0]
	b := g.Brokers[0]
	if m, err := c.Master(g); err != nil || m != b {
		t.Fatalf("master of %s: %v %v, want %s at %s", g.Name, m, err, b, b.Addr())
	}
	histPath := os.Getenv("WHEELMQ_CHAOS_HISTORY")
	if histPath == "" {
		histPath = filepath.Join(dir, "history.jsonl")
	}
	rec, err := history.NewRecorder(histPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	topic := processtest.Unique("chaos_harness")
	createTopic(t, c, g, topic, 2)
	w := &workload{t: t, rec: rec, namesrv: c.NamesrvAddrs(), topic: topic, group: processtest.Unique("chaos-cg"),
		seed: 2, Producers: 4, Rate: 20, TimerShare: 0.3, CancelShare: 0.3, MaxDue: 5 * time.Second}
	processtest.QuietClient()
	w.startConsumers(1)
	w.startProducers()
	time.Sleep(2 * time.Second)

	rec.Nemesis("blackhole " + b.String())
	b.Isolate(proxy.Blackhole)
	start := time.Now()
	time.Sleep(4 * time.Second)
	b.Isolate(proxy.Pass)
	rec.Nemesis("healed " + b.String())
	if at := firstOKAfter(rec.Ops(), start.UnixMilli()+1000); at == 0 {
		waitFor(t, 15*time.Second, "an ok send after the blackhole", func() bool {
			return firstOKAfter(rec.Ops(), start.UnixMilli()+4000) != 0
		})
	} else if at < start.UnixMilli()+4000 {
		t.Errorf("a send was acknowledged %d ms into a 4 s blackhole", at-start.UnixMilli())
	}

	rec.Nemesis("kill -9 " + b.String())
	b.Proc.Kill()
	time.Sleep(time.Second)
	if err := b.Proc.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitHealthy(30 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, b.Proc.Output())
	}
	rec.Nemesis("restarted " + b.String())
	if _, err := c.WaitMaster(g, "", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	w.stopProducers()

	w.mu.Lock()
	drainUntil := time.UnixMilli(max(w.lastDue, time.Now().UnixMilli())).Add(40 * time.Second)
	w.mu.Unlock()
	for time.Now().Before(drainUntil) && drained(rec.Ops()) > 0 {
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	r := history.Check(rec.Ops(), history.Options{})
	t.Logf("history: %s", r)
	for _, v := range r.Violations(history.Options{}) {
		t.Errorf("violation: %s", v)
	}
	cancels := 0
	for _, op := range rec.Ops() {
		if op.F == history.FCancel && op.Type == history.OK {
			cancels++
		}
	}
	if r.OK < 100 || r.Lateness.N == 0 || cancels == 0 {
		t.Errorf("workload too thin: %d ok, %d timers delivered, %d cancels confirmed", r.OK, r.Lateness.N, cancels)
	}
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
