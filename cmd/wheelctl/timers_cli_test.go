package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// TestTimersListAndCancel: wheelctl timers lists a one-off timer and two
// recurring schedules that wheelctl send made (their offset message ids,
// the schedules' texts and fire numbers); --schedules leaves the one-off
// out; cancelling a listed schedule by the listed id removes it from the
// listing. Usage errors exit 2; an unknown topic is a one-line failure.
func TestTimersListAndCancel(t *testing.T) {
	t.Parallel() // waits more than it computes
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_timers")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)

	offsetID := regexp.MustCompile(`offsetMsgId (\w+)`)
	send := func(args ...string) string {
		t.Helper()
		out := mustRun(t, append([]string{"send", "--topic", topic, ns}, args...)...)
		m := offsetID.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("send %v printed %q", args, out)
		}
		return m[1]
	}
	oneOff := send("--delay", "10m", "--body", "once")
	hourly := send("--every", "1h", "--body", "hourly")
	daily := send("--cron", "0 9 * * *", "--tz", "Europe/Berlin", "--body", "daily")

	list := func(args ...string) []pendingTimer {
		t.Helper()
		var rows []pendingTimer
		out := mustRun(t, append([]string{"timers", "--topic", topic, "--json", ns}, args...)...)
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("timers --json printed %q: %v", out, err)
		}
		return rows
	}
	// Until the wheel holds all three (it takes a timer just after the send's answer).
	var rows []pendingTimer
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if rows = list(); len(rows) == 3 || time.Now().After(deadline) {
			break
		}
	}
	byID := map[string]pendingTimer{}
	for _, r := range rows {
		byID[r.OffsetMsgID] = r
	}
	if len(rows) != 3 || byID[oneOff].Schedule != "" || byID[hourly].Schedule != "@every 1h0m0s" || byID[hourly].Seq != 1 ||
		byID[daily].Schedule != "CRON_TZ=Europe/Berlin 0 9 * * *" || byID[daily].Seq != 1 || byID[oneOff].Broker != n.BrokerAddr() {
		t.Fatalf("timers listed %+v, want the one-off %s and the schedules %s and %s at fire 1", rows, oneOff, hourly, daily)
	}
	text := mustRun(t, "timers", "--topic", topic, ns)
	if !strings.Contains(text, "3 pending timers of "+topic) || !strings.Contains(text, "wheelctl cancel --msg-id") {
		t.Fatalf("timers printed %q", text)
	}
	for _, id := range []string{oneOff, hourly, daily} {
		line := lineWith(text, id)
		if id != oneOff && !strings.Contains(line, "#1") || !strings.Contains(line, " UTC") {
			t.Errorf("timers printed the row of %s as %q", id, line)
		}
	}
	if s := list("--schedules"); len(s) != 2 || s[0].Schedule == "" || s[1].Schedule == "" {
		t.Fatalf("timers --schedules listed %+v, want the two schedules", s)
	}
	if l := list("--limit", "1"); len(l) != 1 || l[0].OffsetMsgID != rows[0].OffsetMsgID {
		t.Fatalf("timers --limit 1 listed %+v, want the first of %+v", l, rows)
	}

	if out := mustRun(t, "cancel", "--msg-id", hourly, ns); !strings.Contains(out, "cancelled "+hourly) {
		t.Fatalf("cancel printed %q", out)
	}
	var left []pendingTimer
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if left = list("--schedules"); len(left) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) != 1 || left[0].OffsetMsgID != daily {
		t.Fatalf("after the cancel timers --schedules listed %+v, want only %s", left, daily)
	}
	if all := list(); len(all) != 2 {
		t.Fatalf("after the cancel timers listed %+v, want the one-off and the daily schedule", all)
	}

	for _, args := range [][]string{{"timers", ns}, {"timers", "--topic", topic, "--limit", "0", ns}} {
		if _, errOut, code := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%q)", args, code, errOut)
		}
	}
	_, errOut, code := runCLI(t, "timers", "--topic", "nosuch_topic", "--broker", n.BrokerAddr())
	if code != 1 || !strings.Contains(errOut, "No topic in this broker") || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
		t.Errorf("an unknown topic: exit %d, %q", code, errOut)
	}
}

// lineWith is the line of out holding s ("" if none).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestTimersACL: against a broker with an ACL, wheelctl timers signed as
// an account with SUB on the topic lists its timer; one without is
// refused in one line and shows no row.
func TestTimersACL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	acl := `accounts:
  - accessKey: timers-admin
    secretKey: timers-admin-secret
    admin: true
  - accessKey: timers-reader
    secretKey: timers-reader-secret
    topicPerms: [timed=SUB]
  - accessKey: timers-other
    secretKey: timers-other-secret
    topicPerms: [other=SUB]
`
	if err := os.WriteFile(path, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	n := processtest.Start(t, processtest.Options{Admin: auth.Credentials{AccessKey: "timers-admin", SecretKey: "timers-admin-secret"},
		MutateNode: func(c *process.Config) { c.ACL = process.ACLConfig{File: path} }})
	as := func(who string) []string {
		return []string{"--access-key", "timers-" + who, "--secret-key", "timers-" + who + "-secret", "--broker", n.BrokerAddr()}
	}
	mustRun(t, append(as("admin"), "topic", "create", "timed", "--queues", "1")...)
	out := mustRun(t, append(as("admin"), "send", "--topic", "timed", "--delay", "10m", "--namesrv", n.NamesrvAddr())...)
	m := regexp.MustCompile(`offsetMsgId (\w+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("send printed %q", out)
	}
	var listed string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if listed = mustRun(t, append(as("reader"), "timers", "--topic", "timed")...); strings.Contains(listed, m[1]) ||
			time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(listed, m[1]) || !strings.Contains(listed, "1 pending timers of timed") {
		t.Fatalf("the reader's timers printed %q, want %s", listed, m[1])
	}
	got, errOut, code := runCLI(t, append(as("other"), "timers", "--topic", "timed")...)
	if code != 1 || !strings.Contains(errOut, "no SUB on topic timed") || got != "" || strings.Contains(errOut, m[1]) {
		t.Fatalf("an account without SUB: exit %d, stdout %q, stderr %q", code, got, errOut)
	}
}
