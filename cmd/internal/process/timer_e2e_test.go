package process_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestTimerMessagesNeverEarly sends timer messages (absolute time, relative
// ms and seconds, a classic delay level, one already due) with the official
// client and checks each arrives on its real topic and queue, not before
// its due time, with RocketMQ's timer properties.
func TestTimerMessagesNeverEarly(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("timer")
	processtest.CreateTopic(t, n, topic, 2)
	group := processtest.Unique("cg")
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	time.Sleep(time.Second)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	due := map[string]int64{}
	send := func(body string, dueMs int64, set func(*primitive.Message)) {
		t.Helper()
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag("T")
		m.WithKeys([]string{"k-" + body})
		set(m)
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v", body, res.Status)
		}
		due[body] = dueMs
	}
	now := time.Now().UnixMilli()
	for i := 0; i < 20; i++ {
		at := now + 800 + int64(i)*37
		send(fmt.Sprintf("abs-%d", i), at, func(m *primitive.Message) { m.WithDelayTimestamp(time.UnixMilli(at)) })
	}
	sent := time.Now().UnixMilli()
	send("rel-ms", sent+1200, func(m *primitive.Message) { m.WithProperty("TIMER_DELAY_MS", "1200") })
	sent = time.Now().UnixMilli()
	send("rel-sec", sent+1000, func(m *primitive.Message) { m.WithProperty("TIMER_DELAY_SEC", "1") })
	sent = time.Now().UnixMilli()
	send("level-1", sent+1000, func(m *primitive.Message) { m.WithDelayTimeLevel(1) })
	send("past", 0, func(m *primitive.Message) { m.WithDelayTimestamp(time.UnixMilli(now - 5000)) })

	if !rec.WaitFor(len(due), 30*time.Second) {
		t.Fatalf("received %d of %d timer messages", rec.Len(), len(due))
	}
	time.Sleep(300 * time.Millisecond)
	got := rec.Snapshot()
	if len(got) != len(due) {
		t.Fatalf("received %d messages, want %d (duplicates?)", len(got), len(due))
	}
	for _, m := range got {
		body := string(m.Body)
		want, ok := due[body]
		if !ok {
			t.Fatalf("unexpected message %q", body)
		}
		if m.Topic != topic || m.GetTags() != "T" || m.GetKeys() != "k-"+body {
			t.Fatalf("%s: topic %q tags %q keys %q", body, m.Topic, m.GetTags(), m.GetKeys())
		}
		if body == "past" {
			continue
		}
		stored := m.StoreTimestamp
		if stored < want {
			t.Fatalf("%s delivered early: stored at %d, due %d", body, stored, want)
		}
		out, err := strconv.ParseInt(m.GetProperty("TIMER_OUT_MS"), 10, 64)
		if err != nil || out < want-50 || out > want+50 {
			t.Fatalf("%s: TIMER_OUT_MS %q, want about %d", body, m.GetProperty("TIMER_OUT_MS"), want)
		}
		if m.GetProperty("TIMER_DEQUEUE_MS") == "" || m.GetProperty("TIMER_ENQUEUE_MS") == "" || m.GetProperty("REAL_TOPIC") != topic {
			t.Fatalf("%s: timer properties missing: %v", body, m.GetProperties())
		}
		if late := stored - want; late > 2000 {
			t.Fatalf("%s delivered %d ms late", body, late)
		}
	}
}
