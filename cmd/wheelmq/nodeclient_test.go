package main_test

// TestNodeClient drives the real wheelmq binary from a second, independent
// RocketMQ remoting client: ali-ons, Alibaba's pure-JavaScript client for
// Node.js (testdata/nodeclient). It writes its headers the way non-Java
// clients do (extFields numbers and booleans as JSON numbers and booleans,
// codeSet as numbers), which the official Go client never does.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// nodeClientDir holds the Node.js client's package.json, lock file and
// script; node_modules is installed there by `npm ci` (never committed).
const nodeClientDir = "testdata/nodeclient"

// nodeEvent is one JSON line of run.js's output.
type nodeEvent struct {
	Event          string   `json:"event"`
	Key            string   `json:"key"`
	Tag            string   `json:"tag"`
	Status         string   `json:"status"`
	Code           *int     `json:"code"`
	Remark         string   `json:"remark"`
	DueMs          int64    `json:"dueMs"`
	StoreTimestamp int64    `json:"storeTimestamp"`
	ReceivedAt     int64    `json:"receivedAt"`
	ReconsumeTimes int      `json:"reconsumeTimes"`
	TimerDeliverMs int64    `json:"timerDeliverMs"`
	Action         string   `json:"action"`
	OK             bool     `json:"ok"`
	Failures       []string `json:"failures"`
	Where          string   `json:"where"`
	Message        string   `json:"message"`
}

func TestNodeClient(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("builds and runs the binary and a Node.js client")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the second-client test (ali-ons, Node.js >= 18) cannot run; " +
			"install Node.js and run `npm ci` in cmd/wheelmq/testdata/nodeclient")
	}
	installNodeDeps(t)
	bin := buildWheelmq(t)
	b := startWheelmq(t, bin)

	const perTag = 5
	topic := fmt.Sprintf("nodeclient-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.js")
	cmd.Dir = nodeClientDir
	cmd.Env = append(os.Environ(),
		"WHEELMQ_NAMESRV="+b.namesrv,
		"WHEELMQ_TOPIC="+topic,
		"WHEELMQ_GROUP="+topic+"-cg",
		"WHEELMQ_COUNT="+strconv.Itoa(perTag),
		"WHEELMQ_TIMER_MS=3000",
		"WHEELMQ_DEADLINE_MS=45000",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	events := parseNodeEvents(t, stdout.Bytes())
	if t.Failed() || runErr != nil || !finalResult(events).OK {
		t.Logf("run.js stdout:\n%s", stdout.String())
		t.Logf("run.js stderr (last 4 KiB):\n%s", tail(stderr.Bytes(), 4096))
	}
	if runErr != nil {
		t.Fatalf("run.js: %v (result failures: %v)", runErr, finalResult(events).Failures)
	}
	checkNodeEvents(t, topic, perTag, events)
}

// checkNodeEvents asserts on the script's events on its own, not trusting
// the script's verdict alone.
func checkNodeEvents(t *testing.T, topic string, perTag int, events []nodeEvent) {
	t.Helper()
	var created bool
	sent := map[string]nodeEvent{}
	got := map[string][]nodeEvent{}
	for _, e := range events {
		switch e.Event {
		case "topic":
			if e.Code == nil || *e.Code != 0 {
				t.Errorf("UPDATE_AND_CREATE_TOPIC with numeric header values: %+v", e)
			}
			created = true
		case "sent":
			if e.Status != "SEND_OK" {
				t.Errorf("send of %s: status %q", e.Key, e.Status)
			}
			sent[e.Key] = e
		case "received":
			got[e.Key] = append(got[e.Key], e)
		}
	}
	if !created {
		t.Error("no topic event: the topic was not created")
	}
	if want := 1 + 3*perTag + 1; len(sent) != want {
		t.Errorf("%d sends acknowledged, want %d", len(sent), want)
	}
	retryKey := topic + "-TagB-0"
	for i := range perTag {
		for _, tag := range []string{"TagA", "TagB", "TagC"} {
			key := fmt.Sprintf("%s-%s-%d", topic, tag, i)
			want := 1
			switch {
			case tag == "TagC":
				want = 0 // filtered out by "TagA || TagB"
			case key == retryKey:
				want = 2 // answered ACTION_RETRY once
			}
			if n := len(got[key]); n != want {
				t.Errorf("%s (tag %s) delivered %d times, want %d", key, tag, n, want)
			}
		}
	}
	if n := len(got[topic+"-early"]); n != 0 {
		t.Errorf("the TagC message sent before the consumer started was delivered %d times", n)
	}
	for key, rs := range got {
		for _, r := range rs {
			if r.Tag != "TagA" && r.Tag != "TagB" {
				t.Errorf("%s delivered with tag %q, outside the filter", key, r.Tag)
			}
		}
	}

	timer := got[topic+"-timer"]
	due := sent[topic+"-timer"].DueMs
	switch {
	case len(timer) != 1:
		t.Errorf("timer message delivered %d times, want 1", len(timer))
	case due == 0:
		t.Error("timer message send has no due time")
	default:
		r := timer[0]
		if r.ReceivedAt < due || r.StoreTimestamp < due {
			t.Errorf("timer message early: due %d, stored %d, received %d", due, r.StoreTimestamp, r.ReceivedAt)
		}
		if r.TimerDeliverMs != due {
			t.Errorf("timer message TIMER_DELIVER_MS %d, sent %d", r.TimerDeliverMs, due)
		}
	}

	if rs := got[retryKey]; len(rs) == 2 {
		first, again := rs[0], rs[1]
		if first.Action != "retry" || first.ReconsumeTimes != 0 {
			t.Errorf("first delivery of %s: %+v", retryKey, first)
		}
		if again.ReconsumeTimes < 1 {
			t.Errorf("redelivery of %s has reconsumeTimes %d, want >= 1", retryKey, again.ReconsumeTimes)
		}
		// Delay level 3 is 10 s; the message is given back after the first
		// delivery, so it cannot come back sooner.
		if again.ReceivedAt < first.ReceivedAt+10_000 {
			t.Errorf("%s came back %d ms after the retry, before delay level 3 (10 s)",
				retryKey, again.ReceivedAt-first.ReceivedAt)
		}
	}
	if res := finalResult(events); !res.OK {
		t.Errorf("run.js reported failures: %v", res.Failures)
	}
}

// parseNodeEvents reads the JSON lines; any other line is an error.
func parseNodeEvents(t *testing.T, out []byte) []nodeEvent {
	t.Helper()
	var events []nodeEvent
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e nodeEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Errorf("run.js printed a line that is not a JSON event: %q: %v", line, err)
			continue
		}
		events = append(events, e)
	}
	return events
}

// finalResult returns the script's "result" event (zero if none).
func finalResult(events []nodeEvent) nodeEvent {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Event == "result" {
			return events[i]
		}
	}
	return nodeEvent{Failures: []string{"no result event"}}
}

// npmInstall serialises installNodeDepsEnv.
var npmInstall sync.Mutex

// installNodeDeps installs the ali-ons client's dependencies (installNodeDepsIn).
func installNodeDeps(t *testing.T) { t.Helper(); installNodeDepsIn(t, nodeClientDir) }

// installNodeDepsIn runs `npm ci` in dir when its node_modules is missing or
// older than its package-lock.json (npm records what it installed in
// node_modules/.package-lock.json).
func installNodeDepsIn(t *testing.T, dir string) { t.Helper(); installNodeDepsEnv(t, dir, nil) }

// installNodeDepsEnv is installNodeDepsIn with npm's environment extended
// by env (npm_config_* settings).
func installNodeDepsEnv(t *testing.T, dir string, env []string) {
	t.Helper()
	// The Node.js tests run in parallel: one npm ci at a time, so that a
	// second test waits for the first's install and finds it done instead
	// of installing over it (on a fresh clone two installs into one
	// node_modules left a half-written package.json for the other's run).
	npmInstall.Lock()
	defer npmInstall.Unlock()
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatalf("the Node.js client's lock file: %v", err)
	}
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err == nil && !installed.ModTime().Before(lock.ModTime()) {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("node is on PATH but npm is not: cannot install the Node.js client's dependencies")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if cause := npmNetworkError(out); cause != "" {
			t.Skipf("npm ci in %s cannot reach the npm registry (%s): the Node.js client's dependencies cannot be installed here; "+
				"run `npm ci` in %s where the registry is reachable", dir, cause, dir)
		}
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// npmNetworkCodes are the error codes npm prints ("npm error code X") when
// it cannot reach its registry: no network, no DNS, a proxy in the way.
var npmNetworkCodes = []string{"ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNRESET", "ENETUNREACH",
	"EHOSTUNREACH", "ERR_SOCKET_TIMEOUT", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "SELF_SIGNED_CERT_IN_CHAIN", "ECONNABORTED"}

// npmNetworkError returns the network error code of a failed npm run's
// output, or "" when it failed for another reason (a broken lock file, a
// script that failed: those fail the test).
func npmNetworkError(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		for _, prefix := range []string{"npm error code ", "npm ERR! code "} {
			if code, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok && slices.Contains(npmNetworkCodes, code) {
				return code
			}
		}
	}
	return ""
}

// buildWheelmq returns the package's wheelmq binary (processtest.Binary).
func buildWheelmq(t *testing.T) string {
	t.Helper()
	return processtest.Binary(t)
}

// wheelmqProc is a running broker with its embedded name server.
type wheelmqProc struct {
	namesrv, broker, metrics, grpc string
}

// startWheelmq runs bin on free loopback ports (its gRPC endpoint too) and
// a temp data dir (and the extra flags), waits for /healthz, and kills it
// when the test ends.
func startWheelmq(t *testing.T, bin string, extra ...string) *wheelmqProc {
	t.Helper()
	p := &wheelmqProc{namesrv: processtest.ReserveAddr(t), broker: processtest.ReserveAddr(t), metrics: processtest.ReserveAddr(t),
		grpc: processtest.ReserveAddr(t)}
	cmd := exec.Command(bin, append([]string{"--data", t.TempDir(), "--listen", p.broker, "--namesrv-listen", p.namesrv,
		"--metrics-listen", p.metrics, "--grpc-listen", p.grpc, "--log-level", "warn"}, extra...)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start wheelmq: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("wheelmq log (last 8 KiB):\n%s", tail(logs.Bytes(), 8192))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("wheelmq exited at start: %v\n%s", err, logs.String())
		default:
		}
		resp, err := client.Get("http://" + p.metrics + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if !slices.Contains(extra, "--acl-file") { // an ACL's name server answers signed requests only
					processtest.WaitBrokerRegistered(t, p.namesrv, p.broker, 20*time.Second) // routes exist
				}
				return p
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("wheelmq not healthy after 30 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tail returns the last n bytes of b, from a line start when possible.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return "...\n" + strings.TrimRight(string(b), "\n")
}
