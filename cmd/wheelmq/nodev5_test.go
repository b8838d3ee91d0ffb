package main_test

// TestNodeV5SDK drives the real wheelmq binary's gRPC endpoint from the
// RocketMQ 5 Node.js SDK (rocketmq-client-nodejs 1.0.8, testdata/nodev5):
// a Producer sends plain and timer messages and recalls one timer message,
// a SimpleConsumer receives and acks them.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// nodeV5Dir holds the RocketMQ 5 Node.js SDK's package.json, lock file and
// script; node_modules is installed there by `npm ci` (never committed).
const nodeV5Dir = "testdata/nodev5"

func TestNodeV5SDK(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("builds and runs the binary and the RocketMQ 5 Node.js SDK")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the RocketMQ 5 Node.js SDK test cannot run; " +
			"install Node.js and run `npm ci` in cmd/wheelmq/testdata/nodev5")
	}
	installNodeDepsIn(t, nodeV5Dir)
	bin := buildWheelmq(t)
	grpcAddr := startWheelmq(t, bin).grpc

	const plain = 5
	const timerMs = 3000
	topic := fmt.Sprintf("nodev5-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.js")
	cmd.Dir = nodeV5Dir
	cmd.Env = append(os.Environ(),
		"WHEELMQ_ENDPOINT="+grpcAddr,
		"WHEELMQ_TOPIC="+topic,
		"WHEELMQ_GROUP="+topic+"-cg",
		"WHEELMQ_COUNT="+strconv.Itoa(plain),
		"WHEELMQ_TIMER_MS="+strconv.Itoa(timerMs),
		"WHEELMQ_DEADLINE_MS=50000",
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
	checkNodeV5Events(t, plain, events)
}

// checkNodeV5Events asserts on the script's events itself: every plain and
// timer message sent arrived, no timer arrived before its due time, the
// recalled one never arrived, and the script reported success.
func checkNodeV5Events(t *testing.T, plain int, events []nodeEvent) {
	t.Helper()
	sent := map[string]nodeEvent{}
	got := map[string]nodeEvent{}
	recalled := false
	for _, e := range events {
		switch e.Event {
		case "sent":
			sent[e.Key] = e
		case "received":
			if _, dup := got[e.Key]; !dup {
				got[e.Key] = e
			}
		case "recalled":
			recalled = e.OK
		}
	}
	if want := plain + 3; len(sent) != want {
		t.Errorf("sent %d messages, want %d", len(sent), want)
	}
	if !recalled {
		t.Error("the recall of a pending timer message failed")
	}
	for key, s := range sent {
		r, ok := got[key]
		switch {
		case key == "recalled":
			if ok {
				t.Errorf("the recalled timer message was delivered at %d (due %d)", r.ReceivedAt, s.DueMs)
			}
		case !ok:
			t.Errorf("%s was sent and never received", key)
		case s.DueMs > 0 && r.ReceivedAt < s.DueMs:
			t.Errorf("timer %s received %d ms early", key, s.DueMs-r.ReceivedAt)
		}
	}
	if res := finalResult(events); !res.OK {
		t.Errorf("run.js reported failures: %v", res.Failures)
	}
}
