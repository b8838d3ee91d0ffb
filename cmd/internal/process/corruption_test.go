package process_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/inspect"
)

// TestDamagedRecordIsSkippedNotAStall plants a bit flip in one stored
// message of a stopped broker and removes its consume queues, so that the
// restarted broker re-dispatches the whole CommitLog over the damage: the
// damaged message alone is lost (skipped, counted, logged), every other
// message is delivered to the official Go client, new sends work, the
// broker stays healthy, and `wheelctl store verify`'s library names the
// damaged file and byte.
func TestDamagedRecordIsSkippedNotAStall(t *testing.T) {
	dir := t.TempDir()
	topic := processtest.Unique("damaged")
	ctx := context.Background()

	n1 := processtest.Start(t, processtest.Options{Dir: dir})
	processtest.CreateTopic(t, n1, topic, 1)
	p1 := processtest.Producer(t, n1.NamesrvAddr())
	var sent []string
	for i := 0; i < 40; i++ {
		body := fmt.Sprintf("before-%02d", i)
		if _, err := p1.SendSync(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("send: %v", err)
		}
		sent = append(sent, body)
	}
	_ = p1.Shutdown()
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n1.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// Flip one byte of the 21st message's body on disk.
	victim := []byte("before-20")
	seg := filepath.Join(dir, "commitlog", "00000000000000000000")
	raw, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, victim)
	if at < 0 || bytes.Count(raw, victim) != 1 {
		t.Fatalf("victim body found %d times in %s", bytes.Count(raw, victim), seg)
	}
	raw[at+len(victim)-1] ^= 0x40
	if err := os.WriteFile(seg, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "consumequeue")); err != nil {
		t.Fatal(err)
	}

	rep, err := inspect.Verify(dir, inspect.Options{})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !rep.Damaged() {
		t.Fatalf("verify found no damage after a bit flip at byte %d of %s", at, seg)
	}
	named := false
	for _, f := range rep.Findings {
		if f.Severity == inspect.Damage && f.Path == seg && f.Pos >= 0 && f.Pos <= int64(at) {
			named = true
		}
	}
	if !named {
		t.Fatalf("verify's findings do not name %s before byte %d: %+v", seg, at, rep.Findings)
	}

	n2 := processtest.Start(t, processtest.Options{Dir: dir, Metrics: true})
	processtest.WaitRoute(t, n2.NamesrvAddr(), topic)
	p2 := processtest.Producer(t, n2.NamesrvAddr())
	for i := 0; i < 4; i++ {
		body := fmt.Sprintf("after-%d", i)
		if _, err := p2.SendSync(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatalf("send after restart on a damaged store: %v", err)
		}
		sent = append(sent, body)
	}
	var want []string
	for _, b := range sent {
		if b != string(victim) {
			want = append(want, b)
		}
	}
	_, rec := processtest.PushConsumer(t, n2.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	if !rec.WaitFor(len(want), 30*time.Second) {
		t.Fatalf("consumer got %d of the %d undamaged messages: damage stalled delivery", rec.Len(), len(want))
	}
	time.Sleep(300 * time.Millisecond)
	sameSet(t, bodies(rec.Snapshot()), want)
	if code, body := healthz(t, n2.MetricsAddr()); code != 200 {
		t.Fatalf("/healthz %d %q: skipped damage must not make the broker unhealthy", code, body)
	}
	if v := scrape(t, n2.MetricsAddr(), "wheelmq_store_corrupt_bytes_total"); v <= 0 {
		t.Fatalf("wheelmq_store_corrupt_bytes_total = %v after a damaged record was skipped", v)
	}
}
