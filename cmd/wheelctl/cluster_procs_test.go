package main

// Helpers of the cluster test: the wheelmq binary, its processes, waits
// and name-server queries.

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// clusterWait bounds every wait of the cluster test.
const clusterWait = 20 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(childCLIEnv) == "1" { // this test binary as wheelctl (see runChild)
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	processtest.MinParallel(4) // its parallel tests wait for processes and clients far more than they compute
	code := m.Run()
	processtest.RemoveBinary()
	os.Exit(code)
}

// buildWheelmq returns cmd/wheelmq built once for the whole package
// (processtest.Binary).
func buildWheelmq(t *testing.T) string {
	t.Helper()
	return processtest.Binary(t)
}

// wmProc is one wheelmq process of the cluster; start runs it again with
// the same arguments (same ports and data directory).
type wmProc struct {
	name    string
	bin     string
	args    []string
	addr    string // the name server's or the broker's address
	metrics string
	log     string
	cmd     *exec.Cmd
}

func startWheelmq(t *testing.T, bin, name, addr string, args ...string) *wmProc {
	t.Helper()
	p := &wmProc{name: name, bin: bin, addr: addr, metrics: processtest.ReserveAddr(t),
		log: filepath.Join(t.TempDir(), name+".log")}
	p.args = append(args, "--metrics-listen", p.metrics, "--log-level", "warn", "--log-format", "json")
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			if b, err := os.ReadFile(p.log); err == nil && len(b) > 0 {
				t.Logf("%s log:\n%s", name, b[max(0, len(b)-4000):])
			}
		}
	})
	p.start(t)
	return p
}

// start runs the process and waits for its /healthz.
func (p *wmProc) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	waitUntil(t, p.name+" healthy", func() bool {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + p.metrics + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kill SIGKILLs the process (if running) and reaps it.
func (p *wmProc) kill(t *testing.T) {
	t.Helper()
	if p.cmd == nil || p.cmd.Process == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// waitUntil polls cond until it holds, failing the test after clusterWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(clusterWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, clusterWait)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("%s took %v", what, d.Round(time.Millisecond))
	}
}

// routeBrokerNames returns the broker names in a name server's route of
// topic (nil when it has none or cannot be asked).
func routeBrokerNames(ns, topic string) []string {
	s := &admin.Session{Timeout: 2 * time.Second}
	defer s.Close()
	r, err := s.Route(context.Background(), ns, topic)
	if err != nil {
		return nil
	}
	var names []string
	for _, q := range r.Queues {
		names = append(names, q.BrokerName)
	}
	return names
}

// clusterBrokerNames returns the master broker names a name server lists
// in GET_BROKER_CLUSTER_INFO for DefaultCluster.
func clusterBrokerNames(ns string) []string {
	s := &admin.Session{Timeout: 2 * time.Second}
	defer s.Close()
	bs, err := s.Brokers(context.Background(), ns)
	if err != nil {
		return nil
	}
	var names []string
	for _, b := range bs {
		if b.Cluster == "DefaultCluster" && b.ID == 0 {
			names = append(names, b.Name)
		}
	}
	return names
}
