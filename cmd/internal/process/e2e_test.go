package process_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

func bodies(msgs []*primitive.MessageExt) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, string(m.Body))
	}
	sort.Strings(out)
	return out
}

func sameSet(t *testing.T, got, want []string) {
	t.Helper()
	sort.Strings(want)
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("message %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// TestSendModesThenConsume sends with every mode of the official client and
// checks that a push consumer receives exactly what was sent.
func TestSendModesThenConsume(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("modes")
	processtest.CreateTopic(t, n, topic, 4)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	var want []string

	for i := 0; i < 20; i++ {
		body := fmt.Sprintf("sync-%d", i)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("sync send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK || res.MsgID == "" || res.OffsetMsgID == "" {
			t.Fatalf("sync send %d: unexpected result %+v", i, res)
		}
		want = append(want, body)
	}
	var wg sync.WaitGroup
	var asyncErr error
	var mu sync.Mutex
	for i := 0; i < 20; i++ {
		body := fmt.Sprintf("async-%d", i)
		want = append(want, body)
		wg.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			defer wg.Done()
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("status %v", res.Status)
			}
			if err != nil {
				mu.Lock()
				asyncErr = err
				mu.Unlock()
			}
		}, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("async send %d: %v", i, err)
		}
	}
	wg.Wait()
	if asyncErr != nil {
		t.Fatalf("async send: %v", asyncErr)
	}
	for i := 0; i < 20; i++ {
		body := fmt.Sprintf("oneway-%d", i)
		if err := p.SendOneWay(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("oneway send %d: %v", i, err)
		}
		want = append(want, body)
	}
	for b := 0; b < 3; b++ {
		var batch []*primitive.Message
		for i := 0; i < 10; i++ {
			body := fmt.Sprintf("batch-%d-%d", b, i)
			batch = append(batch, primitive.NewMessage(topic, []byte(body)))
			want = append(want, body)
		}
		res, err := p.SendSync(ctx, batch...)
		if err != nil {
			t.Fatalf("batch send %d: %v", b, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("batch send %d: status %v", b, res.Status)
		}
	}

	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	if !rec.WaitFor(len(want), 30*time.Second) {
		t.Fatalf("received %d of %d messages", rec.Len(), len(want))
	}
	time.Sleep(300 * time.Millisecond) // anything extra would arrive now
	got := rec.Snapshot()
	sameSet(t, bodies(got), want)
	for _, m := range got {
		if m.Topic != topic || m.MsgId == "" || m.StoreHost == "" {
			t.Fatalf("message metadata incomplete: topic %q msgId %q storeHost %q", m.Topic, m.MsgId, m.StoreHost)
		}
	}
}

// TestTagFilter checks that a consumer of "TagA || TagC" receives only
// those tags.
func TestTagFilter(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("tags")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	var want []string
	for i := 0; i < 30; i++ {
		tag := []string{"TagA", "TagB", "TagC"}[i%3]
		body := fmt.Sprintf("%s-%d", tag, i)
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag(tag)
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatalf("send: %v", err)
		}
		if tag != "TagB" {
			want = append(want, body)
		}
	}
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "TagA || TagC")
	if !rec.WaitFor(len(want), 30*time.Second) {
		t.Fatalf("received %d of %d messages", rec.Len(), len(want))
	}
	time.Sleep(500 * time.Millisecond)
	got := rec.Snapshot()
	sameSet(t, bodies(got), want)
	for _, m := range got {
		if m.GetTags() == "TagB" {
			t.Fatalf("TagB message delivered: %s", m.Body)
		}
	}
}

// TestConsumerGroupSplitsQueues starts two consumers in one group: they
// share the queues and together receive every message exactly once.
func TestConsumerGroupSplitsQueues(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("split")
	processtest.CreateTopic(t, n, topic, 4)
	group := processtest.Unique("cg")
	_, rec1 := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	_, rec2 := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	p := processtest.Producer(t, n.NamesrvAddr())
	settled := waitSplit(t, p, topic, rec1, rec2)

	var want []string
	for i := 0; i < 80; i++ {
		body := fmt.Sprintf("m-%d", i)
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("send: %v", err)
		}
		want = append(want, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for rec1.Len()+rec2.Len() < len(want) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	got := append(rec1.Snapshot()[settled[0]:], rec2.Snapshot()[settled[1]:]...)
	sameSet(t, bodies(got), want)
	if rec1.Len() == 0 || rec2.Len() == 0 {
		t.Fatalf("queues not split: consumer 1 got %d, consumer 2 got %d", rec1.Len(), rec2.Len())
	}
}

// syncSender is what waitSplit needs of a producer.
type syncSender interface {
	SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
}

// waitSplit sends rounds of probe messages (8 a round, over the topic's
// queues) until one round reaches both consumers, each probe exactly once:
// both consumers then hold queues and none is held by both, so the group
// has rebalanced. It returns how many messages each had received by then.
func waitSplit(t *testing.T, p syncSender, topic string, rec1, rec2 *processtest.Received) [2]int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for round := 0; ; round++ {
		from := [2]int{rec1.Len(), rec2.Len()}
		probes := map[string]bool{}
		for i := range 8 {
			body := fmt.Sprintf("probe-%d-%d", round, i)
			if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body))); err != nil {
				t.Fatalf("send probe: %v", err)
			}
			probes[body] = true
		}
		count := func() (map[string]int, [2]int) {
			seen, per := map[string]int{}, [2]int{}
			for i, rec := range []*processtest.Received{rec1, rec2} {
				for _, m := range rec.Snapshot()[from[i]:] {
					if probes[string(m.Body)] {
						seen[string(m.Body)]++
						per[i]++
					}
				}
			}
			return seen, per
		}
		for {
			seen, _ := count()
			if len(seen) == len(probes) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // a second copy of a probe would arrive now
		seen, per := count()
		once := len(seen) == len(probes)
		for _, c := range seen {
			once = once && c == 1
		}
		if once && per[0] > 0 && per[1] > 0 {
			return [2]int{rec1.Len(), rec2.Len()}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group did not rebalance within 30 s: last probe round %d: %d of %d probes, per consumer %v", round, len(seen), len(probes), per)
		}
	}
}
