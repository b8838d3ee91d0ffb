package main

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

type poppedMsg struct {
	body   string
	queue  int32
	offset int64
	rt     int32
	ck     string
}

func rawPop(t *testing.T, addr, group, topic string, invisible, poll int64) []poppedMsg {
	t.Helper()
	resp := processtest.Invoke(t, addr, remoting.NewRequest(remoting.PopMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "-1", "maxMsgNums": "32",
		"invisibleTime": strconv.FormatInt(invisible, 10), "pollTime": strconv.FormatInt(poll, 10),
		"initMode": "0", "expType": "TAG", "exp": "*",
	}, nil))
	var out []poppedMsg
	for b := resp.Body; len(b) > 0; {
		r, n, err := message.Decode(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		b = b[n:]
		ck, _ := message.LookupProperty(r.Properties, pop.PropPopCK)
		out = append(out, poppedMsg{string(r.Body), r.QueueID, r.QueueOffset, r.ReconsumeTimes, ck})
	}
	return out
}

// TestSIGKILLKeepsPopStateRemoting pops 20 messages over remoting, acks
// half, SIGKILLs the binary and starts it again: no acked message comes
// back, the others come back (attempt 2), none before its deadline.
func TestSIGKILLKeepsPopStateRemoting(t *testing.T) {
	t.Parallel() // its own processes and data directory; kills and restarts wait more than they compute
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const invisible = 6000
	bin := buildBinary(t)
	dir := t.TempDir()
	p1 := startProc(t, bin, dir, "--flush", "sync")
	topic, group := processtest.Unique("poprc"), processtest.Unique("poprcg")
	prod := processtest.Producer(t, p1.namesrv)
	for i := range 20 {
		if _, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("m%02d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	var got []poppedMsg
	for deadline := time.Now().Add(15 * time.Second); len(got) < 20 && time.Now().Before(deadline); {
		got = append(got, rawPop(t, p1.broker, group, topic, invisible, 1000)...)
	}
	if len(got) != 20 {
		t.Fatalf("popped %d of 20", len(got))
	}
	popped := time.Now()
	acked := map[string]bool{}
	for i, m := range got {
		if i%2 == 1 {
			continue
		}
		r := processtest.Invoke(t, p1.broker, remoting.NewRequest(remoting.AckMessage, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(m.queue)), "extraInfo": m.ck,
			"offset": strconv.FormatInt(m.offset, 10)}, nil))
		if r.Code != remoting.Success {
			t.Fatalf("ack %s: %d %s", m.body, r.Code, r.Remark)
		}
		acked[m.body] = true
	}
	_ = prod.Shutdown()
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p1.wait(t, 10*time.Second)
	p2 := startProc(t, bin, dir, "--flush", "sync")
	back := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(back) < 10 && time.Now().Before(deadline); {
		for _, m := range rawPop(t, p2.broker, group, topic, 60000, 2000) {
			if acked[m.body] {
				t.Fatalf("acked %s delivered again after SIGKILL", m.body)
			}
			if el := time.Since(popped); el < invisible*time.Millisecond-500*time.Millisecond {
				t.Fatalf("%s back %v after its pop, before its %d ms deadline", m.body, el, invisible)
			}
			if m.rt != 1 {
				t.Fatalf("%s back with reconsumeTimes %d, want 1", m.body, m.rt)
			}
			back[m.body] = true
		}
	}
	if len(back) != 10 {
		t.Fatalf("%d of 10 un-acked messages came back: %v", len(back), back)
	}
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p2.wait(t, 30*time.Second)
}
