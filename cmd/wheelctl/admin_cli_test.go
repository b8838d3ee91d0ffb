package main

// wheelctl's admin and message commands against a real in-process broker
// (actors/node/nodetest) over TCP.

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// mustRun runs a command line that must succeed.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("wheelctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// startNode starts a broker with an embedded name server and waits until
// the broker has registered.
func startNode(t *testing.T, o processtest.Options) *process.Node {
	t.Helper()
	n := processtest.Start(t, o)
	s := &admin.Session{Timeout: time.Second}
	defer s.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		bs, err := s.Brokers(context.Background(), n.NamesrvAddr())
		if err == nil && len(bs) > 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not register within 15 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rowsOf returns the table rows whose first field is first.
func rowsOf(out, first string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == first {
			rows = append(rows, f)
		}
	}
	return rows
}

func TestTopicLifecycle(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_topic")

	out := mustRun(t, "topic", "create", topic, "--queues", "4", ns)
	if !strings.Contains(out, "created topic "+topic) || !strings.Contains(out, "4 queues, perm rw") {
		t.Fatalf("create: %s", out)
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)

	rows := rowsOf(mustRun(t, "topic", "list", ns), topic)
	if len(rows) != 1 || rows[0][2] != "4" || rows[0][3] != "4" || rows[0][4] != "rw" {
		t.Fatalf("list rows for %s: %v", topic, rows)
	}
	if rows := rowsOf(mustRun(t, "topic", "list", ns), "TBW102"); len(rows) != 0 {
		t.Errorf("system topics listed without --system: %v", rows)
	}
	if rows := rowsOf(mustRun(t, "topic", "list", "--system", ns), "TBW102"); len(rows) != 1 {
		t.Errorf("--system should list TBW102: %v", rows)
	}

	mustRun(t, "send", "--topic", topic, "--count", "3", "--keys", "k1,k2", ns)
	deadline := time.Now().Add(10 * time.Second)
	for { // the consume queues follow the CommitLog asynchronously
		out = mustRun(t, "topic", "describe", topic, ns)
		if strings.Contains(out, "3 messages held") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out, "3 messages held") || len(rowsOf(out, "broker-a")) != 4 {
		t.Fatalf("describe after 3 sends:\n%s", out)
	}

	out = mustRun(t, "topic", "delete", topic, ns)
	if !strings.Contains(out, "deleted topic "+topic) || !strings.Contains(out, "deleted the route") {
		t.Fatalf("delete: %s", out)
	}
	if rows := rowsOf(mustRun(t, "topic", "list", ns), topic); len(rows) != 0 {
		t.Fatalf("still listed after delete: %v", rows)
	}
	_, errOut, code := runCLI(t, "topic", "describe", topic, ns)
	if code != 1 || !strings.Contains(errOut, "topic not found") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("describe after delete: exit %d, %q", code, errOut)
	}
}

var (
	offsetIDRe = regexp.MustCompile(`offsetMsgId ([0-9A-F]{32})`)
	dueRe      = regexp.MustCompile(`due (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC)`)
)

// TestSendDelayConsume sends a timer message with --delay and consumes it:
// it must arrive, not before its due time, and be shown as a timer message.
func TestSendDelayConsume(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_delay")
	processtest.CreateTopic(t, n, topic, 2)

	sentAt := time.Now()
	out := mustRun(t, "send", "--topic", topic, "--tag", "later", "--body", "due soon", "--delay", "2s", ns)
	m := dueRe.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "cancel with: wheelctl cancel --msg-id") {
		t.Fatalf("send output lacks the due time and cancel hint:\n%s", out)
	}
	due, err := time.Parse(timeLayout, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if d := due.Sub(sentAt); d < 2*time.Second-time.Millisecond || d > 3*time.Second { // printed to the ms
		t.Fatalf("due %s is %s after the send call, want about 2s", due, d)
	}

	out = mustRun(t, "consume", "--topic", topic, "--group", processtest.Unique("g"), "--count", "1", "--wait", "60s", ns)
	received := time.Now()
	if received.Before(due) {
		t.Fatalf("consume returned at %s, before the due time %s", received, due)
	}
	for _, want := range []string{"#1  " + topic, "tags later", "timer  due " + m[1], "after due", `"due soon"`} {
		if !strings.Contains(out, want) {
			t.Errorf("consume output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "EARLY") {
		t.Errorf("delivered before its due time:\n%s", out)
	}
}

// TestCancel cancels a pending timer message: it is never delivered.
func TestCancel(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_cancel")
	processtest.CreateTopic(t, n, topic, 1)

	out := mustRun(t, "send", "--topic", topic, "--delay", "3s", ns)
	m := offsetIDRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no offsetMsgId in:\n%s", out)
	}
	out = mustRun(t, "cancel", "--msg-id", m[1])
	if !strings.Contains(out, "cancelled "+m[1]+" on "+n.BrokerAddr()) {
		t.Fatalf("cancel: %s (broker %s)", out, n.BrokerAddr())
	}
	_, errOut, code := runCLI(t, "consume", "--topic", topic, "--group", processtest.Unique("g"), "--count", "1", "--wait", "8s", ns)
	if code != 1 || !strings.Contains(errOut, "received 0 of 1 messages within 8s") {
		t.Fatalf("a cancelled timer was delivered, or consume failed otherwise: exit %d, %q", code, errOut)
	}
	// Cancelling it again is refused in one line.
	_, errOut, code = runCLI(t, "cancel", "--msg-id", m[1])
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "CANCEL_TIMER_MESSAGE refused") {
		t.Fatalf("second cancel: exit %d, %q", code, errOut)
	}
}

// TestGroupDescribeLag consumes 5 messages, sends 3 more and expects a lag
// of 3, from GET_CONSUME_STATS (and with --topic too).
func TestGroupDescribeLag(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic, group := processtest.Unique("wheelctl_lag"), processtest.Unique("g")
	processtest.CreateTopic(t, n, topic, 2)
	mustRun(t, "send", "--topic", topic, "--count", "5", ns)
	mustRun(t, "consume", "--topic", topic, "--group", group, "--count", "5", "--wait", "60s", ns)
	mustRun(t, "send", "--topic", topic, "--count", "3", ns)

	for _, args := range [][]string{{"group", "describe", group, ns}, {"group", "describe", group, "--topic", topic, ns}} {
		var out string
		deadline := time.Now().Add(15 * time.Second)
		for { // the consumer commits its offsets asynchronously
			out = mustRun(t, args...)
			if strings.Contains(out, "total lag 3\n") || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("%v:\n%s", args, out)
		if !strings.Contains(out, "total lag 3\n") || len(rowsOf(out, topic)) != 2 {
			t.Fatalf("%v: want two queues and a total lag of 3:\n%s", args, out)
		}
	}
	out := mustRun(t, "group", "list", ns)
	if len(rowsOf(out, group)) == 0 && !strings.Contains(out, group) {
		t.Errorf("group list does not show %s:\n%s", group, out)
	}
}

// TestNotServedIsOneLine points admin commands at a server that serves none
// of the admin requests (the ack-only peer, like a broker of an older
// version): each says so in one line.
func TestNotServedIsOneLine(t *testing.T) {
	nb, err := startNullBroker(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer nb.stop()
	_, errOut, code := runCLI(t, "group", "list", "--broker", nb.addr())
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "does not serve GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201)") {
		t.Errorf("group list: exit %d, %q", code, errOut)
	}
	n := startNode(t, processtest.Options{})
	out := mustRun(t, "cluster", "list", "--namesrv="+n.NamesrvAddr())
	rows := rowsOf(out, "DefaultCluster")
	if len(rows) != 1 || rows[0][1] != "broker-a" || rows[0][3] != n.BrokerAddr() || strings.Contains(out, "does not serve") {
		t.Errorf("cluster list on a broker that serves GET_BROKER_RUNTIME_INFO:\n%s", out)
	}
	var brokers []clusterBroker
	js := mustRun(t, "cluster", "list", "--json", "--namesrv="+n.NamesrvAddr())
	if err := json.Unmarshal([]byte(js), &brokers); err != nil {
		t.Fatalf("cluster list --json: %v\n%s", err, js)
	}
	if len(brokers) != 1 || brokers[0].Broker != "broker-a" || brokers[0].Addr != n.BrokerAddr() || brokers[0].Role != "standalone" ||
		brokers[0].Version == "" || brokers[0].UptimeMs <= 0 || brokers[0].Error != "" {
		t.Errorf("cluster list --json: %+v", brokers)
	}
}

func TestStatsAndTopOnce(t *testing.T) {
	n := startNode(t, processtest.Options{Metrics: true})
	url := "--metrics=http://" + n.MetricsAddr() + "/metrics"
	topic := processtest.Unique("wheelctl_stats")
	processtest.CreateTopic(t, n, topic, 1)
	mustRun(t, "send", "--topic", topic, "--count", "2", "--delay", "1h", "--namesrv="+n.NamesrvAddr())

	out := mustRun(t, "stats", url, "--interval", "200ms")
	for _, want := range []string{"commitlog", "stage messages/s", "timers pending", "timer lateness"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats lacks %q:\n%s", want, out)
		}
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "stats", url, "--interval", "200ms", "--json")), &js); err != nil {
		t.Fatal(err)
	}
	timer, _ := js["timer"].(map[string]any)
	stages, _ := js["stages"].(map[string]any)
	deadline := time.Now().Add(10 * time.Second)
	for timer["pending"] != 2.0 && time.Now().Before(deadline) { // the timers reach the wheel asynchronously
		time.Sleep(100 * time.Millisecond)
		_ = json.Unmarshal([]byte(mustRun(t, "stats", url, "--interval", "100ms", "--json")), &js)
		timer, _ = js["timer"].(map[string]any)
	}
	if timer["pending"] != 2.0 || stages["commitlog"] == nil || timer["due_next_minute"] != 0.0 { // both due in 1h
		t.Errorf("stats --json: timer %v, stages %v", timer, stages)
	}

	out = mustRun(t, "top", "--once", url, "--interval", "200ms", "--width", "80")
	for _, want := range []string{"wheelmq top", "STAGE", "commitlog", "TIMERS", "pending", "STORE", "dispatch lag"} {
		if !strings.Contains(out, want) {
			t.Errorf("top frame lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("line wider than 80: %q", l)
		}
	}
}

// TestGroupReset moves a group's offsets back with wheelctl group reset
// and reads them back with group describe.
func TestGroupReset(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic, group := processtest.Unique("wheelctl_reset"), processtest.Unique("g")
	processtest.CreateTopic(t, n, topic, 1)
	mustRun(t, "send", "--topic", topic, "--count", "4", ns)
	mustRun(t, "consume", "--topic", topic, "--group", group, "--count", "4", "--wait", "60s", ns)

	out := mustRun(t, "group", "reset", group, "--topic", topic, "--queue", "0", "--offset", "1", ns)
	if rows := rowsOf(out, topic); len(rows) != 1 || rows[0][2] != "0" || rows[0][3] != "1" {
		t.Fatalf("reset to offset 1:\n%s", out)
	}
	out = mustRun(t, "group", "describe", group, "--topic", topic, ns)
	if !strings.Contains(out, "total lag 3\n") {
		t.Fatalf("after the reset the lag is not 3:\n%s", out)
	}
	out = mustRun(t, "group", "reset", group, "--topic", topic, "--to", "end", ns)
	if rows := rowsOf(out, topic); len(rows) != 1 || rows[0][3] != "4" {
		t.Fatalf("reset to the end:\n%s", out)
	}
	if _, errOut, code := runCLI(t, "group", "reset", group, "--topic", topic, "--queue", "0", ns); code == 0 || !strings.Contains(errOut, "--offset") {
		t.Fatalf("reset with --queue alone: exit %d %s", code, errOut)
	}
}
