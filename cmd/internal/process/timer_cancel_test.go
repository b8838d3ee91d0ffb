package process_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestTimerCancel cancels one timer with a RocketMQ-style TIMER_DEL_UNIQKEY
// message and one with the admin request, and leaves a third alone: only the
// third arrives. A cancel for an unknown key is a no-op.
func TestTimerCancel(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("cancel")
	processtest.CreateTopic(t, n, topic, 1)
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	at := time.Now().Add(2 * time.Second)
	send := func(body string, set func(*primitive.Message)) *primitive.SendResult {
		t.Helper()
		m := primitive.NewMessage(topic, []byte(body))
		m.WithDelayTimestamp(at)
		if set != nil {
			set(m)
		}
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		return res
	}
	byMsg := send("cancel-by-message", nil)
	byAdmin := send("cancel-by-admin", nil)
	send("keep", nil)
	send("cancel-record", func(m *primitive.Message) {
		m.WithProperty("TIMER_DEL_UNIQKEY", topic+"+"+byMsg.MsgID)
	})
	send("cancel-unknown", func(m *primitive.Message) {
		m.WithProperty("TIMER_DEL_UNIQKEY", topic+"+NO_SUCH_KEY")
	})
	resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.CancelTimerMessage,
		map[string]string{"msgId": byAdmin.OffsetMsgID}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("admin cancel: code %d %s", resp.Code, resp.Remark)
	}
	plain, err := p.SendSync(ctx, primitive.NewMessage(processtest.Unique("plain"), []byte("not a timer")))
	if err != nil {
		t.Fatal(err)
	}
	resp = processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.CancelTimerMessage,
		map[string]string{"msgId": plain.OffsetMsgID}, nil))
	if resp.Code != remoting.QueryNotFound {
		t.Fatalf("admin cancel of a non-timer id: code %d %s", resp.Code, resp.Remark)
	}
	resp = processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.CancelTimerMessage,
		map[string]string{"msgId": "not-hex"}, nil))
	if resp.Code != remoting.InvalidParameter {
		t.Fatalf("admin cancel with a malformed id: code %d %s", resp.Code, resp.Remark)
	}
	if !rec.WaitFor(1, 20*time.Second) {
		t.Fatal("the uncancelled timer never arrived")
	}
	time.Sleep(1500 * time.Millisecond) // a cancelled one would arrive with it
	got := rec.Snapshot()
	if len(got) != 1 || string(got[0].Body) != "keep" {
		var bodies []string
		for _, m := range got {
			bodies = append(bodies, string(m.Body))
		}
		t.Fatalf("received %v, want only [keep]", bodies)
	}
}

// TestTimerBadInput checks the refusals of malformed timer messages and
// that the pipeline keeps delivering afterwards.
func TestTimerBadInput(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("tbad")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	year := 366 * 24 * time.Hour
	cases := map[string]func(*primitive.Message){
		"beyond max delay":   func(m *primitive.Message) { m.WithDelayTimestamp(time.Now().Add(year)) },
		"delay sec too long": func(m *primitive.Message) { m.WithProperty("TIMER_DELAY_SEC", strconv.Itoa(int(year.Seconds()))) },
		"negative delay":     func(m *primitive.Message) { m.WithProperty("TIMER_DELAY_MS", "-5") },
		"unparsable":         func(m *primitive.Message) { m.WithProperty("TIMER_DELIVER_MS", "tomorrow") },
		"bad level":          func(m *primitive.Message) { m.WithProperty("DELAY", "x") },
		"past cancel": func(m *primitive.Message) {
			m.WithProperty("TIMER_DEL_UNIQKEY", topic+"+X")
			m.WithDelayTimestamp(time.Now().Add(-time.Second))
		},
	}
	for name, set := range cases {
		m := primitive.NewMessage(topic, []byte(name))
		set(m)
		_, err := p.SendSync(ctx, m)
		if err == nil || !strings.Contains(err.Error(), "CODE: 13") {
			t.Errorf("%s: want MESSAGE_ILLEGAL (13), got %v", name, err)
		}
	}
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	m := primitive.NewMessage(topic, []byte("fine"))
	m.WithDelayTimestamp(time.Now().Add(500 * time.Millisecond))
	if _, err := p.SendSync(ctx, m); err != nil {
		t.Fatalf("good timer after bad ones: %v", err)
	}
	if !rec.WaitFor(1, 20*time.Second) {
		t.Fatal("pipeline stuck after bad input")
	}
	time.Sleep(300 * time.Millisecond)
	if got := rec.Snapshot(); len(got) != 1 || string(got[0].Body) != "fine" {
		t.Fatalf("received %d messages", len(got))
	}
}
