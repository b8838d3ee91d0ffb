package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// buildBinary returns cmd/wheelmq built once for the whole package
// (processtest.Binary; TestMain removes it).
func buildBinary(t *testing.T) string {
	t.Helper()
	return processtest.Binary(t)
}

// lastBytes is the end of s, at most n bytes of it.
func lastBytes(s string, n int) string { return s[max(0, len(s)-n):] }

// testHTTP is the HTTP client of this package's tests: every health and
// metrics request has a deadline (a port taken by another listener must not
// hang a test).
var testHTTP = &http.Client{Timeout: 5 * time.Second}

type proc struct {
	cmd     *exec.Cmd
	namesrv string
	broker  string
	metrics string
	grpc    string        // the gRPC endpoint (RocketMQ 5 SDKs)
	exited  chan struct{} // closed when the process has ended
	waitErr error         // its exit status, once exited is closed
	stderr  bytes.Buffer  // a copy of its stderr (read once exited is closed)
}

// wait waits up to timeout for the process to end and returns its exit
// status (cmd.Wait's error); a process still running after timeout is a
// test failure.
func (p *proc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(timeout):
		t.Fatalf("wheelmq still running %v after the signal", timeout)
		return nil
	}
}

// startProc runs the binary on loopback ports the test holds
// (processtest.ReserveAddr) and waits for /healthz; a process that exits
// or stays unhealthy fails the test with the tail of its output.
func startProc(t *testing.T, bin, dir string, extra ...string) *proc {
	t.Helper()
	p, err := tryStartProc(t, bin, dir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryStartProc starts the binary once and waits up to 20 s for /healthz.
func tryStartProc(t *testing.T, bin, dir string, extra ...string) (*proc, error) {
	t.Helper()
	return tryStartProcEnv(t, bin, dir, nil, extra...)
}

// tryStartProcEnv is tryStartProc with env (KEY=value) added to the
// process's environment.
func tryStartProcEnv(t *testing.T, bin, dir string, env []string, extra ...string) (*proc, error) {
	t.Helper()
	p := &proc{
		namesrv: processtest.ReserveAddr(t),
		broker:  processtest.ReserveAddr(t),
		metrics: processtest.ReserveAddr(t),
		grpc:    processtest.ReserveAddr(t),
	}
	args := append([]string{"--data", dir, "--listen", p.broker, "--namesrv-listen", p.namesrv,
		"--metrics-listen", p.metrics, "--grpc-listen", p.grpc, "--log-level", "warn"}, extra...)
	p.cmd = exec.Command(bin, args...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stderr = io.MultiWriter(os.Stderr, &p.stderr)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start wheelmq: %w", err)
	}
	p.exited = make(chan struct{})
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }() // ends with the process (Cleanup kills it)
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := testHTTP.Get("http://" + p.metrics + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// Healthy comes before the first registration: a client
				// asking for routes in between finds none.
				processtest.WaitBrokerRegistered(t, p.namesrv, p.broker, 20*time.Second)
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("wheelmq exited: %v (last health check: %v)\n%s", p.waitErr, err, lastBytes(p.stderr.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("wheelmq did not become healthy: %w\n%s", err, lastBytes(p.stderr.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSIGKILLKeepsAcknowledgedMessages kills the broker process right after
// acknowledged sends (async flush: the data is in the page cache, which
// survives a process crash) and checks that every acknowledged message is
// consumable after the restart. It then stops the second process with
// SIGTERM and expects a clean exit.
func TestSIGKILLKeepsAcknowledgedMessages(t *testing.T) {
	t.Parallel() // its own processes and data directories; waits for them and the client more than it computes
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, flush := range []string{"async", "sync"} {
		t.Run(flush, func(t *testing.T) {
			bin := buildBinary(t)
			dir := t.TempDir()
			p1 := startProc(t, bin, dir, "--flush", flush)
			topic := processtest.Unique("crash")
			prod := processtest.Producer(t, p1.namesrv)
			var acked []string
			for i := 0; i < 200; i++ {
				body := fmt.Sprintf("%s-%d", flush, i)
				res, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
				if err == nil && res.Status == primitive.SendOK {
					acked = append(acked, body)
				}
			}
			if len(acked) < 150 {
				t.Fatalf("only %d of 200 sends acknowledged", len(acked))
			}
			if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = p1.wait(t, 10*time.Second)
			_ = prod.Shutdown()

			p2 := startProc(t, bin, dir, "--flush", flush)
			processtest.WaitRoute(t, p2.namesrv, topic)
			_, rec := processtest.PushConsumer(t, p2.namesrv, processtest.Unique("cg"), topic, "*")
			ackedSet := make(map[string]bool, len(acked))
			for _, b := range acked {
				ackedSet[b] = true
			}
			// Sends whose acknowledgement the kill lost are stored too: wait for
			// the acknowledged ones themselves, not for a count.
			if !rec.WaitUntil(processtest.HasBodies(ackedSet, 0), 40*time.Second) {
				t.Fatalf("after SIGKILL: not every one of %d acknowledged messages arrived (%d received)", len(acked), rec.Len())
			}
			got := map[string]bool{}
			for _, m := range rec.Snapshot() {
				got[string(m.Body)] = true
			}
			var missing []string
			for _, b := range acked {
				if !got[b] {
					missing = append(missing, b)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Fatalf("%d acknowledged messages lost, e.g. %v", len(missing), missing[:min(5, len(missing))])
			}
			if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := p2.wait(t, 30*time.Second); err != nil {
				t.Fatalf("SIGTERM exit: %v", err)
			}
		})
	}
}

// TestSIGKILLWithPendingTimers kills the broker while timer messages are
// pending (some due before the restart, some after): after the restart
// every acknowledged timer is delivered exactly once and none early.
func TestSIGKILLWithPendingTimers(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	p1 := startProc(t, bin, dir)
	topic := processtest.Unique("crashtimer")
	prod := processtest.Producer(t, p1.namesrv)
	due := map[string]int64{}
	base := time.Now()
	for i := 0; i < 300; i++ {
		// Due from 0.5 s to 3.5 s from now: the kill and restart fall in between.
		at := base.Add(500*time.Millisecond + time.Duration(i)*10*time.Millisecond)
		body := fmt.Sprintf("timer-%d", i)
		m := primitive.NewMessage(topic, []byte(body))
		m.WithDelayTimestamp(at)
		res, err := prod.SendSync(context.Background(), m)
		if err == nil && res.Status == primitive.SendOK {
			due[body] = at.UnixMilli()
		}
	}
	if len(due) < 250 {
		t.Fatalf("only %d of 300 timer sends acknowledged", len(due))
	}
	time.Sleep(time.Second) // some are delivered before the kill
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p1.wait(t, 10*time.Second)
	_ = prod.Shutdown()

	p2 := startProc(t, bin, dir)
	processtest.WaitRoute(t, p2.namesrv, topic)
	_, rec := processtest.PushConsumer(t, p2.namesrv, processtest.Unique("cg"), topic, "*")
	if !rec.WaitFor(len(due), 40*time.Second) {
		t.Fatalf("after SIGKILL: %d of %d acknowledged timer messages delivered", rec.Len(), len(due))
	}
	time.Sleep(time.Second)
	seen := map[string]int{}
	for _, m := range rec.Snapshot() {
		body := string(m.Body)
		seen[body]++
		if want, ok := due[body]; ok && m.StoreTimestamp < want {
			t.Fatalf("%s delivered early: stored %d, due %d", body, m.StoreTimestamp, want)
		}
	}
	dups := 0
	for body := range due {
		switch seen[body] {
		case 0:
			t.Fatalf("timer %s lost", body)
		case 1:
		default:
			dups++
		}
	}
	if dups > 0 {
		t.Fatalf("%d timer messages delivered more than once after the restart", dups)
	}
}
