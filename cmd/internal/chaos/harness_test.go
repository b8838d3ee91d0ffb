package chaos_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/cluster"
	"github.com/wheelmq/wheelmq/cmd/internal/chaos/history"
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
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
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

	// The chaos test's own nemesis runner, with faults that need no
	// failover: a blackhole of the broker from everyone, then kill -9 and
	// a restart on the same dir.
	rng := rand.New(rand.NewPCG(2, 0))
	blackhole := nemeses["blackhole-master"]
	blackhole.expectFailover = false
	began := time.Now().UnixMilli()
	runNemesis(t, c, g, blackhole, rec, rng)
	// A send whose bytes passed just before the switch may still be
	// acknowledged: 100 ms of grace.
	if at := firstOKAfter(rec.Ops(), began+100); at != 0 && at < began+faultFor.Milliseconds() {
		t.Errorf("a send invoked in a %v blackhole was acknowledged %d ms into it", faultFor, at-began)
	}
	kill := nemeses["kill-master"]
	kill.expectFailover = false
	runNemesis(t, c, g, kill, rec, rng)
	if !b.Proc.Running() {
		t.Fatalf("%s not restarted by the nemesis's heal", b)
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
