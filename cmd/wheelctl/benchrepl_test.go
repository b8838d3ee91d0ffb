package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestSyncSetRe: the /healthz role line's sync-state set is read, and only
// a master's.
func TestSyncSetRe(t *testing.T) {
	for line, want := range map[string]int{
		"role: master broker_id=0 replica_id=1 epoch=1 fenced=false sync_state_set=[1 2 3] confirmed_offset=9": 3,
		"role: master broker_id=0 replica_id=1 epoch=1 fenced=false sync_state_set=[1] confirmed_offset=0":     1,
		"role: replica broker_id=2 replica_id=2 epoch=1 fenced=false sync_state_set=[1 2] confirmed_offset=0":  -1,
	} {
		m := syncSetRe.FindStringSubmatch(line)
		got := -1
		if m != nil {
			got = len(strings.Fields(m[1]))
		}
		if got != want {
			t.Errorf("%q: %d members, want %d", line, got, want)
		}
	}
}

// TestProcCPU: this process's CPU time grows while it spins.
func TestProcCPU(t *testing.T) {
	// Spin until the kernel's own account (getrusage) says this process
	// used 150 ms more CPU, however long that takes on a loaded machine:
	// procCPU, read from /proc, must then show most of it.
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before, ruBefore := procCPU(os.Getpid()), rusage()
	for deadline := time.Now().Add(30 * time.Second); rusage()-ruBefore < 150*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatal("could not spend 150 ms of CPU within 30 s")
		}
	}
	if after := procCPU(os.Getpid()); after-before < 100*time.Millisecond {
		t.Fatalf("CPU %s -> %s after spinning 150 ms of CPU", before, after)
	}
	if procCPU(-1) != 0 {
		t.Fatal("CPU of no process")
	}
}

// TestBenchReplicatedProcs spawns a real wheelmq binary: a single broker
// and a group of 2 (3 name servers with controllers), async flush, and
// checks every sample was acknowledged without error. Set
// WHEELMQ_BENCH_PROCS=1 to run it (it builds cmd/wheelmq, about 30 s).
func TestBenchReplicatedProcs(t *testing.T) {
	if os.Getenv("WHEELMQ_BENCH_PROCS") == "" {
		t.Skip("set WHEELMQ_BENCH_PROCS=1 to spawn wheelmq processes")
	}
	bin := processtest.Binary(t)
	out := mustRun(t, "bench", "replicated", "--wheelmq", bin, "--runs", "1", "--duration", "500ms",
		"--flush", "async", "--groups", "2", "--workloads", "sync16,async", "--json")
	var samples []replSample
	if err := json.Unmarshal([]byte(out), &samples); err != nil {
		t.Fatalf("--json does not parse: %v\n%s", err, out)
	}
	if len(samples) != 4 {
		t.Fatalf("%d samples, want 4 (2 targets x 2 workloads):\n%s", len(samples), out)
	}
	for _, s := range samples {
		if s.MsgsPerS <= 0 || s.Errors != 0 || s.P50Ms <= 0 || s.CPUMaster <= 0 {
			t.Errorf("sample %+v", s)
		}
		if (s.Replicas == 2) != (s.CPUReplicas > 0) {
			t.Errorf("replica CPU %v for %d replicas", s.CPUReplicas, s.Replicas)
		}
	}
}
