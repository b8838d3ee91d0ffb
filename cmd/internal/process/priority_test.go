package process_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestPriorityRemoting: the remoting side of priority messages (RocketMQ
// 5.4's PRIORITY property; docs/priority.md). On a topic of type PRIORITY
// with 3 queues a send is stored in queue min(priority, 2) whatever queue
// it names, the answer naming that queue; a priority that is not an
// integer in range, and a message without one, are refused and store
// nothing; a POP of queue -1 gets the highest queue first; a POP
// redelivery comes back in its queue (its priority) before lower ones.
func TestPriorityRemoting(t *testing.T) {
	t.Parallel() // its own broker (and browser): overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{})
	topic, group := processtest.Unique("prio"), processtest.Unique("priogroup")
	mustOK(t, "create", call(t, n.BrokerAddr(), remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "3", "writeQueueNums": "3", "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": "+message.type=PRIORITY"}, nil))
	send := func(body string, props map[string]string) *remoting.Command {
		req := processtest.SendRequest(topic, 0, []byte(body), props)
		return call(t, n.BrokerAddr(), remoting.SendMessage, req.ExtFields, []byte(body))
	}
	for i, prio := range []string{"0", "7", "1", "2", "0", "1"} {
		resp := mustOK(t, "send priority "+prio, send("p"+prio+"-"+strconv.Itoa(i), map[string]string{message.PropPriority: prio}))
		p, _ := strconv.Atoi(prio)
		if want := strconv.Itoa(min(p, 2)); resp.Field("queueId") != want {
			t.Fatalf("priority %s answered queueId %s, want %s", prio, resp.Field("queueId"), want)
		}
	}
	for _, bad := range []string{"high", "-1", "1.5", "99999999999"} {
		if resp := send("bad", map[string]string{message.PropPriority: bad}); resp.Code != remoting.MessageIllegal || !strings.Contains(resp.Remark, "priority") {
			t.Errorf("PRIORITY=%q: %d %q, want %d", bad, resp.Code, resp.Remark, remoting.MessageIllegal)
		}
	}
	if resp := send("none", nil); resp.Code == remoting.Success {
		t.Error("a message without a priority was stored in a PRIORITY topic")
	}
	for q, want := range []int64{2, 2, 2} {
		if got := n.Broker().Store().Queues.Lookup(topic, int32(q)).MaxOffset(); got != want {
			t.Fatalf("queue %d holds %d messages, want %d", q, got, want)
		}
	}

	code, first := doPop(t, n.BrokerAddr(), popReq(group, topic, -1, 60000, 0, "*"))
	if code != remoting.Success || len(first) != 6 {
		t.Fatalf("pop: %d %v", code, first)
	}
	var queues []int32
	for _, m := range first {
		queues = append(queues, m.queue)
	}
	if !slices.Equal(queues, []int32{2, 2, 1, 1, 0, 0}) {
		t.Fatalf("popped from queues %v, want the highest first", queues)
	}
	// Ack all but one of priority 1 and one of priority 0; change the first
	// of priority 1 to come back at once: it is delivered before the 0.
	for _, m := range []popped{first[0], first[1], first[3], first[5]} {
		mustOK(t, "ack", call(t, n.BrokerAddr(), remoting.AckMessage, ackReq(group, topic, m).ExtFields, nil))
	}
	mustOK(t, "change", call(t, n.BrokerAddr(), remoting.ChangeMessageInvisibleTime, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "1", "extraInfo": first[2].ck,
		"offset": strconv.FormatInt(first[2].offset, 10), "invisibleTime": "0"}, nil))
	mustOK(t, "change", call(t, n.BrokerAddr(), remoting.ChangeMessageInvisibleTime, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "extraInfo": first[4].ck,
		"offset": strconv.FormatInt(first[4].offset, 10), "invisibleTime": "0"}, nil))
	engine := n.Broker().Pipeline().Pop()
	waitFor(t, 10*time.Second, "both visible again", func() bool { return engine.Inflight() == 0 })
	_, again := doPop(t, n.BrokerAddr(), popReq(group, topic, -1, 60000, 0, "*"))
	if len(again) != 2 || again[0].body != first[2].body || again[1].body != first[4].body || again[0].reconsumeTimes != 1 {
		t.Fatalf("redelivered %+v, want %s then %s", again, first[2].body, first[4].body)
	}
}
