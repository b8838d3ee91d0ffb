package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// popped is one message of a POP_MESSAGE answer.
type popped struct {
	body           string
	queue          int32
	offset         int64
	reconsumeTimes int32
	ck             string
}

func popReq(group, topic string, queue int32, invisible, poll int64, exp string) *remoting.Command {
	return remoting.NewRequest(remoting.PopMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(queue)), "maxMsgNums": "32",
		"invisibleTime": strconv.FormatInt(invisible, 10), "pollTime": strconv.FormatInt(poll, 10),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10), "initMode": "0", "expType": "TAG", "exp": exp,
		"order": "false", "attemptId": "a1",
	}, nil)
}

func doPop(t *testing.T, addr string, req *remoting.Command) (int32, []popped) {
	t.Helper()
	resp := processtest.Invoke(t, addr, req)
	var out []popped
	for b := resp.Body; len(b) > 0; {
		r, n, err := message.Decode(b)
		if err != nil {
			t.Fatalf("decode popped record: %v", err)
		}
		b = b[n:]
		ck, ok := message.LookupProperty(r.Properties, pop.PropPopCK)
		if !ok {
			t.Fatalf("popped message without %s", pop.PropPopCK)
		}
		out = append(out, popped{string(r.Body), r.QueueID, r.QueueOffset, r.ReconsumeTimes, ck})
	}
	if resp.Code == remoting.Success && resp.Field("popTime") == "" {
		t.Fatalf("pop answer without popTime: %v", resp.ExtFields)
	}
	return resp.Code, out
}

func ackReq(group, topic string, m popped) *remoting.Command {
	return remoting.NewRequest(remoting.AckMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(m.queue)),
		"extraInfo": m.ck, "offset": strconv.FormatInt(m.offset, 10),
	}, nil)
}

// TestPop pops, acks, batch acks, changes, and sees expired deliveries
// come back in place with reconsumeTimes+1, tag-filtered, and a long
// poll woken by a send; then a restart redelivers nothing acked.
func TestPop(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir})
	addr := n.BrokerAddr()
	topic, group := processtest.Unique("pop"), processtest.Unique("popcg")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	send := func(body, tag string) {
		t.Helper()
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag(tag)
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
	}
	for i := range 4 {
		send(fmt.Sprintf("a%d", i), "A")
	}
	send("b0", "B")

	deadline := time.Now().Add(10 * time.Second)
	var got []popped
	for len(got) < 4 && time.Now().Before(deadline) { // the dispatcher makes them poppable
		_, ms := doPop(t, addr, popReq(group, topic, -1, 1000, 0, "A"))
		got = append(got, ms...)
		if len(got) < 4 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(got) != 4 {
		t.Fatalf("popped %d messages tagged A, want 4: %+v", len(got), got)
	}
	for _, m := range got {
		if m.body[0] != 'a' || m.reconsumeTimes != 0 {
			t.Fatalf("first delivery %+v: want a tag-A body and reconsumeTimes 0", m)
		}
	}
	if code, ms := doPop(t, addr, popReq(group, topic, -1, 1000, 0, "A")); code != remoting.PullNotFound || len(ms) != 0 {
		t.Fatalf("pop with all in flight: code %d, %d messages", code, len(ms))
	}
	// Ack the first; a second ack of the same handle is refused.
	if r := processtest.Invoke(t, addr, ackReq(group, topic, got[0])); r.Code != remoting.Success {
		t.Fatalf("ack: %d %s", r.Code, r.Remark)
	}
	if r := processtest.Invoke(t, addr, ackReq(group, topic, got[0])); r.Code == remoting.Success {
		t.Fatal("a second ack of one handle succeeded")
	}
	// Change the second: the old handle is refused, the new one acks.
	r := processtest.Invoke(t, addr, remoting.NewRequest(remoting.ChangeMessageInvisibleTime, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(got[1].queue)),
		"extraInfo": got[1].ck, "offset": strconv.FormatInt(got[1].offset, 10), "invisibleTime": "60000",
	}, nil))
	if r.Code != remoting.Success {
		t.Fatalf("change: %d %s", r.Code, r.Remark)
	}
	h, err := pop.ParseHandle(got[1].ck)
	if err != nil {
		t.Fatal(err)
	}
	newPop, _ := strconv.ParseInt(r.Field("popTime"), 10, 64)
	if newPop <= h.PopTime || r.Field("invisibleTime") != "60000" {
		t.Fatalf("change answered popTime %d (old %d) invisibleTime %s", newPop, h.PopTime, r.Field("invisibleTime"))
	}
	if r := processtest.Invoke(t, addr, ackReq(group, topic, got[1])); r.Code == remoting.Success {
		t.Fatal("the handle replaced by a change still acks")
	}
	h.PopTime, h.InvisibleTime = newPop, 60000
	changed := got[1]
	changed.ck = h.String()
	if r := processtest.Invoke(t, addr, ackReq(group, topic, changed)); r.Code != remoting.Success {
		t.Fatalf("ack with the changed handle: %d %s", r.Code, r.Remark)
	}
	// The other two expire and come back in place, reconsumeTimes 1.
	time.Sleep(1100 * time.Millisecond)
	_, again := doPop(t, addr, popReq(group, topic, -1, 30000, 0, "A"))
	if len(again) != 2 {
		t.Fatalf("redelivered %d, want 2: %+v", len(again), again)
	}
	for _, m := range again {
		if m.reconsumeTimes != 1 || (m.offset != got[2].offset && m.offset != got[3].offset) {
			t.Fatalf("redelivery %+v: want reconsumeTimes 1 at an expired offset", m)
		}
	}
	// Batch ack both (java.util.BitSet.toByteArray of the offsets).
	bh, _ := pop.ParseHandle(again[0].ck)
	var acks []map[string]any
	for _, m := range again {
		acks = append(acks, map[string]any{"consumerGroup": group, "topic": topic, "retry": "0", "startOffset": m.offset,
			"queueId": m.queue, "reviveQueueId": 0, "popTime": bh.PopTime, "invisibleTime": 30000, "bitSet": []byte{1}})
	}
	body, _ := json.Marshal(map[string]any{"brokerName": "broker-a", "acks": acks})
	if r := processtest.Invoke(t, addr, remoting.NewRequest(remoting.BatchAckMessage, nil, body)); r.Code != remoting.Success {
		t.Fatalf("batch ack: %d %s", r.Code, r.Remark)
	}
	// A long poll is woken by a send.
	go func() {
		time.Sleep(300 * time.Millisecond)
		m := primitive.NewMessage(topic, []byte("a-late"))
		m.WithTag("A")
		_, _ = p.SendSync(ctx, m)
	}()
	start := time.Now()
	// A poll of 8 s (within Invoke's 10 s): a pop that was not woken ends
	// after the 6 s bound, which leaves a loaded machine room.
	_, late := doPop(t, addr, popReq(group, topic, -1, 30000, 8000, "A"))
	if len(late) != 1 || late[0].body != "a-late" || time.Since(start) > 6*time.Second {
		t.Fatalf("long poll got %+v after %v", late, time.Since(start))
	}
	if r := processtest.Invoke(t, addr, ackReq(group, topic, late[0])); r.Code != remoting.Success {
		t.Fatalf("ack late: %d %s", r.Code, r.Remark)
	}
	// Three more: the middle one acked (a gap), the others in flight over
	// the restart.
	for _, b := range []string{"a-x", "a-y", "a-z"} {
		send(b, "A")
	}
	var xyz []popped
	for deadline := time.Now().Add(10 * time.Second); len(xyz) < 3 && time.Now().Before(deadline); {
		_, ms := doPop(t, addr, popReq(group, topic, -1, 4000, 1000, "A"))
		xyz = append(xyz, ms...)
	}
	if len(xyz) != 3 {
		t.Fatalf("popped %+v, want a-x, a-y, a-z", xyz)
	}
	for _, m := range xyz {
		if m.body == "a-y" {
			if r := processtest.Invoke(t, addr, ackReq(group, topic, m)); r.Code != remoting.Success {
				t.Fatalf("ack a-y: %d %s", r.Code, r.Remark)
			}
		}
	}
	// Restart on the same data: nothing acked comes back, nothing in
	// flight before its deadline; a new send does.
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	n = processtest.Start(t, processtest.Options{Dir: dir})
	addr = n.BrokerAddr()
	p2 := processtest.Producer(t, n.NamesrvAddr())
	m := primitive.NewMessage(topic, []byte("a-after"))
	m.WithTag("A")
	if _, err := p2.SendSync(ctx, m); err != nil {
		t.Fatal(err)
	}
	var after []popped
	for deadline := time.Now().Add(10 * time.Second); len(after) == 0 && time.Now().Before(deadline); {
		_, after = doPop(t, addr, popReq(group, topic, -1, 30000, 1000, "A"))
	}
	if len(after) != 1 || after[0].body != "a-after" {
		t.Fatalf("after restart popped %+v, want only a-after", after)
	}
	if r := processtest.Invoke(t, addr, ackReq(group, topic, after[0])); r.Code != remoting.Success {
		t.Fatalf("ack a-after: %d %s", r.Code, r.Remark)
	}
	// The two in flight come back after their deadline, attempt 2.
	var back []popped
	for deadline := time.Now().Add(15 * time.Second); len(back) < 2 && time.Now().Before(deadline); {
		_, ms := doPop(t, addr, popReq(group, topic, -1, 30000, 2000, "A"))
		back = append(back, ms...)
	}
	if len(back) != 2 {
		t.Fatalf("after the deadline popped %+v, want a-x and a-z", back)
	}
	for _, m := range back {
		if (m.body != "a-x" && m.body != "a-z") || m.reconsumeTimes != 1 {
			t.Fatalf("redelivery after restart %+v: want a-x or a-z with reconsumeTimes 1", m)
		}
	}
	if code, ms := doPop(t, addr, popReq(group, topic, -1, 30000, 0, "A")); len(ms) != 0 {
		t.Fatalf("pop after all: code %d %+v", code, ms)
	}
}
