package main

// Crash torture: the real binary under load, SIGKILLed at random moments
// and restarted on the same data directory, loop after loop, in both flush
// modes. After every restart the test checks what the broker promised
// (docs/operations.md, "What survives what"):
//
//   - every acknowledged message is consumable (read back by offset from
//     every queue, body CRCs checked);
//   - no timer message is delivered before its due time, and every
//     acknowledged timer is delivered (the ones due while the broker was
//     down right after the restart, the rest when due);
//   - consumer offsets never go backwards: after a restart a queue's
//     committed offset is at least what it was after the previous restart
//     and at least every commit the broker answered more than
//     offsetFlushInterval+offsetGrace (6.5 s) before the kill (offsets are
//     persisted every 5 s; younger commits may be lost, and the consumer
//     then sees those messages again);
//   - duplicates (a message read back more than once) are counted and
//     reported: sends whose answer the kill swallowed are sent again, as a
//     client retries, and are stored twice when the first try was stored.
//
// README's test command runs WHEELMQ_TORTURE_LOOPS=3 loops per flush mode
// (the default); `task torture LOOPS=50` runs long.

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// tortureLoops reads WHEELMQ_TORTURE_LOOPS (default 3).
func tortureLoops(t *testing.T) int {
	v := os.Getenv("WHEELMQ_TORTURE_LOOPS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("WHEELMQ_TORTURE_LOOPS=%q: want a positive number", v)
	}
	return n
}

// tortureStats are the figures a run reports.
type tortureStats struct {
	loops, plain, timers, resent, duplicates, brokerDuplicates, redelivered, offsetChecks int
}

func (s *tortureStats) add(o tortureStats) {
	s.loops += o.loops
	s.plain += o.plain
	s.timers += o.timers
	s.resent += o.resent
	s.duplicates += o.duplicates
	s.brokerDuplicates += o.brokerDuplicates
	s.redelivered += o.redelivered
	s.offsetChecks += o.offsetChecks
}

func (s tortureStats) String() string {
	return fmt.Sprintf("%d loops, %d plain and %d timer messages acknowledged, %d sends retried after a kill, "+
		"%d duplicates read back (%d without a retry), %d redeliveries to the consumer, %d offset guarantees checked",
		s.loops, s.plain, s.timers, s.resent, s.duplicates, s.brokerDuplicates, s.redelivered, s.offsetChecks)
}

func TestCrashTorture(t *testing.T) {
	t.Parallel() // its own processes and data directory; kills and restarts wait more than they compute
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	loops := tortureLoops(t)
	bin := buildBinary(t)
	began := time.Now()
	var mu sync.Mutex
	var total tortureStats // guarded by mu
	// The flush modes run side by side (each its own process and data
	// directory); the total is logged once both are done.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("crash torture: %s in %s", total, time.Since(began).Round(100*time.Millisecond))
	})
	for _, flush := range []string{"async", "sync"} {
		t.Run(flush, func(t *testing.T) {
			t.Parallel()
			st := torture(t, bin, flush, loops)
			t.Logf("%s flush: %s", flush, st)
			mu.Lock()
			total.add(st)
			mu.Unlock()
		})
	}
}

// torture runs loops kill-and-restart cycles in one data directory.
func torture(t *testing.T, bin, flush string, loops int) tortureStats {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	dir, logs := t.TempDir(), t.TempDir()
	led := newLedger()
	topic := "torture_" + flush
	p := startTortureProc(t, bin, dir, logs, flush)
	createTortureTopic(t, p.broker, topic)
	stored := queryOffsets(t, p.broker, topic) // after the last restart
	var st tortureStats
	for loop := 0; loop < loops; loop++ {
		ld := newLoad(p.broker, topic, fmt.Sprintf("%d", loop), led, seed+uint64(loop))
		if err := ld.resend(context.Background()); err != nil {
			t.Fatalf("loop %d: resending what the last kill left in doubt: %v", loop, err)
		}
		led.mu.Lock()
		led.commits = [tortureQueues][]commit{}
		led.mu.Unlock()
		// One loop in three runs past the offsets' flush interval, so the
		// offset guarantee is exercised; the others are killed sooner.
		run := 300*time.Millisecond + time.Duration(rng.IntN(3700))*time.Millisecond
		if loop%3 == 0 {
			run = 7500*time.Millisecond + time.Duration(rng.IntN(1000))*time.Millisecond
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); ld.produce(ctx, i, false) }()
		}
		wg.Add(2)
		go func() { defer wg.Done(); ld.produce(ctx, 9, true) }()
		go func() { defer wg.Done(); ld.consume(ctx) }()
		time.Sleep(run)
		killAt := time.Now()
		p.kill(t)
		cancel()
		wg.Wait()

		p = startTortureProc(t, bin, dir, logs, flush)
		checked := checkOffsets(t, p.broker, topic, led, killAt, stored)
		st.offsetChecks += checked.guarantees
		stored = checked.stored
		dups := checkReadBack(t, p.broker, topic, led, false)
		led.mu.Lock()
		t.Logf("loop %d: killed after %s; %d messages acknowledged so far, %d in doubt, %d duplicates read back; offsets %v",
			loop, run.Round(time.Millisecond), len(led.acked), len(led.inDoubt), dups.all, stored)
		led.mu.Unlock()
	}
	// Last: what was in doubt is sent again, every timer comes due, and the
	// broker stops cleanly.
	if err := newLoad(p.broker, topic, "final", led, seed).resend(context.Background()); err != nil {
		t.Fatalf("final resend: %v", err)
	}
	dups := checkReadBack(t, p.broker, topic, led, true)
	p.terminate(t)

	led.mu.Lock()
	defer led.mu.Unlock()
	if len(led.early) > 0 {
		t.Fatalf("%d timer messages reached the consumer before their due time, e.g. %v", len(led.early), led.early[0])
	}
	st.loops = loops
	for _, m := range led.acked {
		if m.due > 0 {
			st.timers++
		} else {
			st.plain++
		}
	}
	st.resent = len(led.resent)
	st.duplicates, st.brokerDuplicates = dups.all, dups.withoutRetry
	for _, n := range led.consumed {
		st.redelivered += max(n-1, 0)
	}
	return st
}

// tortureProc is one broker process of the torture test.
type tortureProc struct {
	cmd     *exec.Cmd
	broker  string
	metrics string
	done    chan struct{} // closed when the process has exited
}

// startTortureProc starts the binary on dir with ports the test holds
// (processtest.ReserveAddr), its log appended to logs/broker.log, and
// waits for /healthz; a process that exits or stays unhealthy fails the
// test (the log's tail is printed then).
func startTortureProc(t *testing.T, bin, dir, logs, flush string) *tortureProc {
	t.Helper()
	p, err := tryStartTortureProc(t, bin, dir, logs, flush)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryStartTortureProc starts the binary once.
func tryStartTortureProc(t *testing.T, bin, dir, logs, flush string) (*tortureProc, error) {
	t.Helper()
	p := &tortureProc{broker: processtest.ReserveAddr(t), metrics: processtest.ReserveAddr(t), done: make(chan struct{})}
	logPath := filepath.Join(logs, "broker.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open broker log: %w", err)
	}
	defer logf.Close() // the child keeps its own descriptor
	p.cmd = exec.Command(bin, "--data", dir, "--listen", p.broker, "--namesrv-listen", processtest.ReserveAddr(t),
		"--metrics-listen", p.metrics, "--grpc-listen=", "--log-level", "warn", "--log-format", "json", "--flush", flush)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start wheelmq: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			dumpTail(t, logPath, 40)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := testHTTP.Get("http://" + p.metrics + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("wheelmq exited during start: %v (its log's tail follows)", p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("wheelmq did not become healthy: %w (its log's tail follows)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill SIGKILLs the process and waits for it to be gone.
func (p *tortureProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// terminate stops the process with SIGTERM and requires a clean exit.
func (p *tortureProc) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if !p.cmd.ProcessState.Success() {
			t.Fatalf("SIGTERM exit: %v", p.cmd.ProcessState)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30 s after SIGTERM")
	}
}

// dumpTail logs the last n lines of a file.
func dumpTail(t *testing.T, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	t.Logf("last lines of %s:\n%s", path, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// rawClient connects to addr for one verification step.
func rawClient(t *testing.T, addr string) *remoting.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createTortureTopic creates the topic with tortureQueues queues.
func createTortureTopic(t *testing.T, addr, topic string) {
	t.Helper()
	c := rawClient(t, addr)
	defer c.Close()
	q := strconv.Itoa(tortureQueues)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("create topic %s: %v %v", topic, err, resp)
	}
}

// queryOffsets returns the group's committed offset of every queue (-1:
// none).
func queryOffsets(t *testing.T, addr, topic string) [tortureQueues]int64 {
	t.Helper()
	c := rawClient(t, addr)
	defer c.Close()
	var out [tortureQueues]int64
	for q := range out {
		off, err := queryOffset(context.Background(), c, topic, int32(q))
		if err != nil {
			t.Fatal(err)
		}
		out[q] = off
	}
	return out
}

// offsetCheck is what checkOffsets found.
type offsetCheck struct {
	stored     [tortureQueues]int64
	guarantees int // queues where a commit older than the flush interval raised the floor
}

// checkOffsets checks the committed offsets after a restart against the
// commits of the killed process's lifetime and what was stored before.
func checkOffsets(t *testing.T, addr, topic string, led *ledger, killAt time.Time, before [tortureQueues]int64) offsetCheck {
	t.Helper()
	out := offsetCheck{stored: queryOffsets(t, addr, topic)}
	durableBy := killAt.Add(-offsetFlushInterval - offsetGrace)
	led.mu.Lock()
	defer led.mu.Unlock()
	for q := range out.stored {
		floor, ceiling := before[q], before[q]
		for _, c := range led.commits[q] {
			ceiling = max(ceiling, c.offset)
			if !c.at.After(durableBy) {
				floor = max(floor, c.offset)
			}
		}
		if floor > before[q] {
			out.guarantees++
		}
		got := out.stored[q]
		if got < floor {
			t.Fatalf("queue %d: committed offset %d after the restart, below %d (the previous restart's %d, or a commit answered over %s before the kill)",
				q, got, floor, before[q], offsetFlushInterval+offsetGrace)
		}
		if got > ceiling {
			t.Fatalf("queue %d: committed offset %d after the restart, above every commit (%d)", q, got, ceiling)
		}
	}
	return out
}

// duplicates counts messages read back more than once.
type duplicates struct{ all, withoutRetry int }

// checkReadBack reads every queue from offset 0 and checks that every
// acknowledged plain message is there, that every acknowledged timer due by
// now (by the last due time when final is set) was delivered, and that none
// was delivered before its due time. It waits for dispatch and for the
// timers, up to a deadline.
func checkReadBack(t *testing.T, addr, topic string, led *ledger, final bool) duplicates {
	t.Helper()
	c := rawClient(t, addr)
	defer c.Close()
	led.mu.Lock()
	acked := make([]msgSpec, 0, len(led.acked))
	var lastDue int64
	for _, m := range led.acked {
		acked = append(acked, m)
		lastDue = max(lastDue, m.due)
	}
	resent := make(map[string]bool, len(led.resent))
	for b := range led.resent {
		resent[b] = true
	}
	led.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	if final {
		deadline = time.UnixMilli(lastDue).Add(20 * time.Second)
	}
	for {
		seen := map[string]int{}
		for q := int32(0); q < tortureQueues; q++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			recs, err := processtest.ReadQueue(ctx, c, topic, q)
			cancel()
			if err != nil {
				t.Fatalf("read back %s/%d: %v", topic, q, err)
			}
			for _, r := range recs {
				seen[string(r.Body)]++
				checkNotEarly(t, r)
			}
		}
		now := time.Now().UnixMilli()
		var missing []string
		for _, m := range acked {
			// A timer due while the broker was down is delivered after the
			// restart; give it two seconds past its due time.
			waitFor := m.due == 0 || final || m.due+2000 < now
			if waitFor && seen[m.body] == 0 {
				missing = append(missing, m.body)
			}
		}
		if len(missing) == 0 {
			var d duplicates
			for b, n := range seen {
				if n > 1 {
					d.all += n - 1
					if !resent[b] {
						d.withoutRetry += n - 1
					}
				}
			}
			return d
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			t.Fatalf("%d acknowledged messages not consumable after the restart, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkNotEarly fails the test for a timer message stored into its real
// topic before its due time.
func checkNotEarly(t *testing.T, r message.Record) {
	body := string(r.Body)
	if !strings.HasPrefix(body, "timer-") {
		return
	}
	_, dueText, ok := strings.Cut(body, "-due-")
	due, err := strconv.ParseInt(dueText, 10, 64)
	if !ok || err != nil {
		t.Fatalf("timer body %q without its due time", body)
	}
	if r.StoreTimestamp < due {
		t.Fatalf("timer %s delivered %d ms early (stored %d, due %d)", body, due-r.StoreTimestamp, r.StoreTimestamp, due)
	}
}
