package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

var sentRe = regexp.MustCompile(`msgId ([0-9A-Fa-f]+)  offsetMsgId ([0-9A-F]{32})`)

// sendOne sends one message with wheelctl and returns its msgId and
// offsetMsgId.
func sendOne(t *testing.T, args ...string) (msgID, offsetID string) {
	t.Helper()
	out := mustRun(t, append([]string{"send"}, args...)...)
	m := sentRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("send output: %s", out)
	}
	return m[1], m[2]
}

// runUntil runs a command line until its output contains every want (the
// index follows the CommitLog asynchronously), or fails at a deadline.
func runUntil(t *testing.T, args []string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, code := runCLI(t, args...)
		ok := code == 0
		for _, w := range want {
			ok = ok && strings.Contains(out, w)
		}
		if ok {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("wheelctl %s: exit %d, want %q in:\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMessageShowAndQuery looks messages up on a real broker by offset id,
// by msgId (UNIQ_KEY) and by key, and reads the state of timer messages:
// pending, delivered and cancelled.
func TestMessageShowAndQuery(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_msg")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)

	plainID, plainOff := sendOne(t, "--topic", topic, "--keys", "order-7,k1", "--tag", "A", "--body", "hello", ns)
	waitID, waitOff := sendOne(t, "--topic", topic, "--keys", "order-7", "--body", "later", "--delay", "1h", ns)
	soonID, soonOff := sendOne(t, "--topic", topic, "--keys", "soon", "--body", "soon", "--delay", "1s", ns)
	_, goneOff := sendOne(t, "--topic", topic, "--keys", "gone", "--body", "gone", "--delay", "1h", ns)
	mustRun(t, "cancel", "--msg-id", goneOff, ns)

	// An ordinary message, by offset id and by msgId.
	for _, args := range [][]string{
		{"message", "show", "--msg-id", plainOff, ns},
		{"message", "show", "--msg-id", plainID, "--topic", topic, ns},
	} {
		out := runUntil(t, args, "#1  "+topic+"  queue broker-a:0  offset 0\n", "msgId "+plainID+"  offsetMsgId "+plainOff,
			"keys order-7 k1  tags A  born ", "UNIQ_KEY="+plainID, `body   5 B  "hello"`)
		if strings.Contains(out, "timer") || strings.Contains(out, "#2") {
			t.Errorf("%v: an ordinary message shown as a timer message, or twice:\n%s", args, out)
		}
	}

	// A timer message waiting in the wheel.
	out := runUntil(t, []string{"message", "show", "--msg-id", waitOff, ns}, "state pending: in the timer wheel, due in",
		"#1  "+topic+"  queue broker-a:0  (not in the queue yet)", "msgId "+waitID, "waiting copy in rmq_sys_wheel_timer queue 0 offset 0")
	if m := dueRe.FindStringSubmatch(out); m == nil {
		t.Errorf("no due time:\n%s", out)
	}

	// Delivered: shown once (the waiting copy with its written-back copy),
	// by offset id of either copy and by msgId.
	out = runUntil(t, []string{"message", "show", "--msg-id", soonID, "--topic", topic, ns},
		"state delivered: written back to "+topic+" queue 0 offset 1 ", "#1  "+topic+"  queue broker-a:0  offset 1\n")
	if strings.Contains(out, "#2") {
		t.Errorf("a delivered timer message is shown twice:\n%s", out)
	}
	runUntil(t, []string{"message", "show", "--msg-id", soonOff, ns}, "state delivered: written back to "+topic)

	// Cancelled with 'wheelctl cancel'.
	runUntil(t, []string{"message", "show", "--msg-id", goneOff, ns}, "state cancelled: cancel stored at", "it will not be delivered")

	// By key: the ordinary message and the waiting timer message.
	out = runUntil(t, []string{"message", "query", "--topic", topic, "--key", "order-7", ns},
		"#1  "+topic+"  queue broker-a:0  offset 0\n", "msgId "+plainID, "#2  "+topic, "msgId "+waitID, "state pending")
	if strings.Contains(out, "#3") {
		t.Errorf("query order-7 found more than 2 messages:\n%s", out)
	}
	// A store-time window before the sends finds nothing.
	if _, errOut, code := runCLI(t, "message", "query", "--topic", topic, "--key", "order-7", "--end", "1", ns); code != 1 ||
		!strings.Contains(errOut, "carries the key order-7") {
		t.Errorf("query with --end 1: exit %d %q", code, errOut)
	}
}

// TestMessageErrors: bad ids and missing messages are one-line errors with
// the conventional exit codes.
func TestMessageErrors(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_msgerr")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"message", "show", "--msg-id", "nothex", ns}, 2, "not an offset message id"},
		{[]string{"message", "show", ns}, 2, "required flag"},
		{[]string{"message", "query", "--topic", topic, ns}, 2, "required flag"},
		{[]string{"message", "query", "--topic", topic, "--key", "k", "--max", "0", ns}, 2, "--max 0"},
		{[]string{"message", "query", "--topic", topic, "--key", "k", "--begin", "yesterday", ns}, 2, "--begin"},
		{[]string{"message", "query", "--topic", topic, "--key", "nope", ns}, 1, "no message of " + topic + " carries the key nope"},
		{[]string{"message", "query", "--topic", "no_such_topic_x", "--key", "k", ns}, 1, "topic not found"},
		{[]string{"message", "show", "--msg-id", "7F000001B5F818B4AAC2164A2F3E0000", "--topic", topic, ns}, 1, "no message with msgId"},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("wheelctl %s: exit %d, stderr %q, stdout %q; want exit %d and one line with %q",
				strings.Join(c.args, " "), code, errOut, out, c.code, c.want)
		}
	}
}

// TestMessageShowConsumers: message show says which groups read the topic
// and whether each consumed the message.
func TestMessageShowConsumers(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic, group := processtest.Unique("wheelctl_track"), processtest.Unique("g")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
	_, first := sendOne(t, "--topic", topic, "--body", "one", ns)
	runUntil(t, []string{"message", "show", "--msg-id", first, ns}, "consumers: no group reads this topic\n")
	mustRun(t, "consume", "--topic", topic, "--group", group, "--count", "1", "--wait", "60s", ns)
	_, second := sendOne(t, "--topic", topic, "--body", "two", ns)
	runUntil(t, []string{"message", "show", "--msg-id", first, ns}, "consumers: "+group+" consumed\n")
	runUntil(t, []string{"message", "show", "--msg-id", second, ns}, "consumers: "+group+" not yet\n")
}
