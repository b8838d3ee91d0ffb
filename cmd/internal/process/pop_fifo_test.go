package process_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// createTypedTopic makes topic with the attributes header attrs, as
// mqadmin updateTopic -a sends it.
func createTypedTopic(t *testing.T, addr, topic, queues, attrs string) *remoting.Command {
	t.Helper()
	return processtest.Invoke(t, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": queues, "writeQueueNums": queues, "perm": "6", "topicFilterType": "SINGLE_TAG",
		"attributes": attrs,
	}, nil))
}

// createOrderlyGroup makes an orderly subscription group (mqadmin
// updateSubGroup -o true).
func createOrderlyGroup(t *testing.T, addr, group string) {
	t.Helper()
	body := []byte(`{"groupName":"` + group + `","consumeMessageOrderly":true,"consumeEnable":true,"retryMaxTimes":16,"retryQueueNums":1}`)
	if r := processtest.Invoke(t, addr, remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body)); r.Code != remoting.Success {
		t.Fatalf("create orderly group: %d %s", r.Code, r.Remark)
	}
}

// TestTopicMessageType: message.type is kept from the attributes header,
// answered by GET_TOPIC_CONFIG and GET_ALL_TOPIC_CONFIG, refused when
// unknown, and checked on send.
func TestTopicMessageType(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Dir: t.TempDir()})
	addr := n.BrokerAddr()
	topic := processtest.Unique("typed")
	if r := createTypedTopic(t, addr, topic, "1", "+message.type=FIFO"); r.Code != remoting.Success {
		t.Fatalf("create FIFO topic: %d %s", r.Code, r.Remark)
	}
	r := processtest.Invoke(t, addr, remoting.NewRequest(remoting.GetTopicConfig, map[string]string{"topic": topic}, nil))
	var cfg struct {
		Attributes map[string]string `json:"attributes"`
	}
	if err := json.Unmarshal(r.Body, &cfg); err != nil || cfg.Attributes["message.type"] != "FIFO" {
		t.Fatalf("GET_TOPIC_CONFIG %s: %v %s", r.Body, err, r.Remark)
	}
	r = processtest.Invoke(t, addr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if !strings.Contains(string(r.Body), `"attributes":{"message.type":"FIFO"}`) {
		t.Fatalf("GET_ALL_TOPIC_CONFIG lacks the attributes: %.300s", r.Body)
	}
	for attrs, want := range map[string]string{
		"+message.kind=FIFO":    "unsupported key: message.kind",
		"+message.type=ORDERED": "value is not in set",
		"+message.type=MIXED":   "MIXED message type is not supported",
		"message.type=FIFO":     "add/alter attribute format is wrong",
		"+queue.type=BatchCQ":   "unchangeable attribute",
	} {
		if r := createTypedTopic(t, addr, topic, "1", attrs); r.Code != remoting.InvalidParameter || !strings.Contains(r.Remark, want) {
			t.Errorf("attributes %q: %d %q, want 29 with %q", attrs, r.Code, r.Remark, want)
		}
	}
	// The update without attributes keeps them.
	if r := createTypedTopic(t, addr, topic, "1", ""); r.Code != remoting.Success {
		t.Fatalf("update: %d %s", r.Code, r.Remark)
	}
	if r := processtest.Invoke(t, addr, processtest.SendRequest(topic, 0, []byte("x"), map[string]string{"__SHARDINGKEY": "g"})); r.Code != remoting.Success {
		t.Fatalf("FIFO message to a FIFO topic: %d %s", r.Code, r.Remark)
	}
	r = processtest.Invoke(t, addr, processtest.SendRequest(topic, 0, []byte("x"), map[string]string{"TAGS": "t"}))
	if r.Code != remoting.MessageIllegal || !strings.Contains(r.Remark, "the expected type is FIFO, but actual type is NORMAL") {
		t.Fatalf("NORMAL message to a FIFO topic: %d %q", r.Code, r.Remark)
	}
	r = processtest.Invoke(t, addr, processtest.SendRequest(topic, 0, []byte("x"), map[string]string{"__SHARDINGKEY": "g", "DELAY": "2"}))
	if r.Code != remoting.MessageIllegal || !strings.Contains(r.Remark, "actual type is DELAY") {
		t.Fatalf("DELAY message to a FIFO topic: %d %q", r.Code, r.Remark)
	}
	// Untyped topics take every type.
	plain := processtest.Unique("untyped")
	processtest.CreateTopic(t, n, plain, 1)
	if r := processtest.Invoke(t, addr, processtest.SendRequest(plain, 0, []byte("x"), map[string]string{"__SHARDINGKEY": "g"})); r.Code != remoting.Success {
		t.Fatalf("FIFO message to an untyped topic: %d %s", r.Code, r.Remark)
	}
}

// TestPopFIFOPerMessageGroup: on a FIFO topic read by an orderly group,
// message groups A and B share one queue; while A's head is in flight
// (or waiting for its redelivery) A's next message is held back and B's
// are delivered; A's next comes once its head is acked; the same holds
// after a restart.
func TestPopFIFOPerMessageGroup(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir})
	addr := n.BrokerAddr()
	topic, group := processtest.Unique("fifo"), processtest.Unique("fifocg")
	if r := createTypedTopic(t, addr, topic, "1", "+message.type=FIFO"); r.Code != remoting.Success {
		t.Fatalf("create FIFO topic: %d %s", r.Code, r.Remark)
	}
	createOrderlyGroup(t, addr, group)
	send := func(g, body string) {
		t.Helper()
		if r := processtest.Invoke(t, addr, processtest.SendRequest(topic, 0, []byte(body), map[string]string{"__SHARDINGKEY": g})); r.Code != remoting.Success {
			t.Fatalf("send %s: %d %s", body, r.Code, r.Remark)
		}
	}
	for _, b := range []string{"A1", "B1", "A2", "B2", "A3"} {
		send(b[:1], b)
	}
	pop := func(invisible int64, want ...string) []popped {
		t.Helper()
		var got []popped
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, ms := doPop(t, addr, popReq(group, topic, -1, invisible, 0, "*"))
			got = append(got, ms...)
			if len(got) >= len(want) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond) // dispatch
		}
		var bodies []string
		for _, m := range got {
			bodies = append(bodies, m.body)
		}
		slices.Sort(bodies)
		if !slices.Equal(bodies, want) {
			t.Fatalf("popped %v, want %v", bodies, want)
		}
		slices.SortFunc(got, func(a, b popped) int { return strings.Compare(a.body, b.body) })
		return got
	}
	ack := func(m popped) {
		t.Helper()
		if r := processtest.Invoke(t, addr, ackReq(group, topic, m)); r.Code != remoting.Success {
			t.Fatalf("ack %s: %d %s", m.body, r.Code, r.Remark)
		}
	}
	none := func() {
		t.Helper()
		if code, ms := doPop(t, addr, popReq(group, topic, -1, 60000, 0, "*")); len(ms) != 0 {
			t.Fatalf("pop with both groups busy: code %d, %+v", code, ms)
		}
	}

	first := pop(1000, "A1", "B1") // one per message group
	a1, b1 := first[0], first[1]
	none()
	ack(b1)
	b2 := pop(60000, "B2")[0] // B flows while A1 is in flight
	none()
	time.Sleep(1200 * time.Millisecond) // A1 expires: its redelivery goes first, A2 stays back
	again := pop(60000, "A1")[0]
	if again.reconsumeTimes != 1 || again.offset != a1.offset {
		t.Fatalf("A1's redelivery %+v: want offset %d and reconsumeTimes 1", again, a1.offset)
	}
	none()
	ack(again)
	a2 := pop(60000, "A2")[0]
	ack(a2)
	a3 := pop(60000, "A3")[0]

	// A3 and B2 in flight; A4 and B3 are passed over; then a restart.
	send("A", "A4")
	send("B", "B3")
	time.Sleep(300 * time.Millisecond)
	none()
	time.Sleep(1200 * time.Millisecond) // the journal's replay start is stored (every second)
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	n = processtest.Start(t, processtest.Options{Dir: dir})
	addr = n.BrokerAddr()
	none() // A3 and B2 still hold their groups
	ack(a3)
	pop(60000, "A4")
	ack(b2)
	pop(60000, "B3")
	none()
}
