package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
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
