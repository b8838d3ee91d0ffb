package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestCancelRecallHandle recalls a pending timer message by the recall
// handle its SEND answered: wheelctl finds the broker from the handle's
// topic route, the message is never delivered, and a handle whose due time
// has passed is refused in one line.
func TestCancelRecallHandle(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	topic := processtest.Unique("wheelctl_recall")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)

	send := func(uniq string, due time.Time) string {
		t.Helper()
		resp := processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(topic, 0, []byte("recall me"), map[string]string{
			message.PropUniqKey: uniq, message.PropTimerDeliverMS: strconv.FormatInt(due.UnixMilli(), 10),
		}))
		if resp.Code != remoting.Success || resp.Field("recallHandle") == "" {
			t.Fatalf("send timer message: code %d %q, recallHandle %q", resp.Code, resp.Remark, resp.Field("recallHandle"))
		}
		return resp.Field("recallHandle")
	}
	uniq := "0A0B0C0D0E0F" + strconv.FormatInt(time.Now().UnixNano(), 16)
	due := time.Now().Add(4 * time.Second)
	handle := send(uniq, due)

	out := mustRun(t, "cancel", "--recall-handle", handle, ns)
	want := "recalled " + uniq + " (topic " + topic + ", due " + time.UnixMilli(due.UnixMilli()).UTC().Format(timeLayout) + ") on "
	if !strings.Contains(out, want) || !strings.Contains(out, "("+n.BrokerAddr()+")") {
		t.Fatalf("cancel --recall-handle printed %q, want %q... (%s)", out, want, n.BrokerAddr())
	}
	_, errOut, code := runCLI(t, "consume", "--topic", topic, "--group", processtest.Unique("g"), "--count", "1", "--wait", "8s", ns)
	if code != 1 || !strings.Contains(errOut, "received 0 of 1 messages within 8s") {
		t.Fatalf("a recalled timer was delivered, or consume failed otherwise: exit %d, %q", code, errOut)
	}

	// Past its due time the handle is refused (RocketMQ's 604), in one line;
	// --broker skips the route lookup.
	_, errOut, code = runCLI(t, "cancel", "--recall-handle", handle, "--broker", n.BrokerAddr())
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "RECALL_MESSAGE refused") {
		t.Fatalf("recall after the due time: exit %d, %q", code, errOut)
	}
}
