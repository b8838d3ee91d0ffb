package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestSendEveryAndCancel: wheelctl send --every makes a recurring timer
// whose fires a consumer gets; message show reports it recurring with its
// next fire; wheelctl cancel --msg-id with the id send printed stops it.
// Bad schedule flags are usage errors; a schedule the broker refuses is a
// one-line failure.
func TestSendEveryAndCancel(t *testing.T) {
	t.Parallel() // waits more than it computes
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_every")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)

	for _, args := range [][]string{{"--every", "1s", "--cron", "* * * * *"}, {"--every", "1s", "--delay", "5s"},
		{"--tz", "Europe/Berlin"}, {"--every", "-1s"}} {
		if _, errOut, code := runCLI(t, append([]string{"send", "--topic", topic, ns}, args...)...); code != 2 {
			t.Errorf("send %v: exit %d, want 2 (%q)", args, code, errOut)
		}
	}
	if _, errOut, code := runCLI(t, "send", "--topic", topic, "--cron", "0 9 * * *", "--tz", "Mars/Base", ns); code != 1 ||
		!strings.Contains(errOut, "unknown time zone") {
		t.Fatalf("an unknown zone: exit %d, %q", code, errOut)
	}
	out := mustRun(t, "send", "--topic", topic, "--every", "1s", "--body", "tick", ns)
	m := regexp.MustCompile(`offsetMsgId (\w+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, `recurring timer "@every 1s"`) {
		t.Fatalf("send --every printed %q", out)
	}
	id := m[1]
	got := mustRun(t, "consume", "--topic", topic, "--group", processtest.Unique("g"), "--count", "2", "--wait", "15s", ns)
	if strings.Count(got, "tick") < 2 {
		t.Fatalf("consume printed %q, want two fires", got)
	}
	show := mustRun(t, "message", "show", "--msg-id", id, ns)
	if !strings.Contains(show, `recurring timer "@every 1s": fire`) {
		t.Fatalf("message show printed %q", show)
	}
	if out := mustRun(t, "cancel", "--msg-id", id, ns); !strings.Contains(out, "cancelled "+id) {
		t.Fatalf("cancel printed %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		show = mustRun(t, "message", "show", "--msg-id", id, ns)
		if strings.Contains(show, "cancelled at") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(show, `recurring timer "@every 1s" cancelled at`) {
		t.Fatalf("message show after the cancel printed %q", show)
	}
	// It names the fire the cancel met: past the two consumed, though the
	// cancel's records crowd the index's answer for the key (message.go).
	f := regexp.MustCompile(`; fire (\d+) \(due [^)]*\) and the later ones do not happen`).FindStringSubmatch(show)
	if f == nil {
		t.Fatalf("message show after the cancel does not name the fire it met: %q", show)
	}
	if seq, _ := strconv.Atoi(f[1]); seq < 3 {
		t.Fatalf("message show after the cancel names fire %d, but two fires were consumed before it: %q", seq, show)
	}
}
