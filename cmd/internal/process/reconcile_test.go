package process_test

import (
	"context"
	"encoding/binary"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/ha"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// cutCommitLog cuts the data directory's single CommitLog segment after
// its keep-th entry (docs/formats.md, "Entries inside a segment": each
// entry is TOTALSIZE bytes of record plus a 4-byte CRC32C) and returns the
// new end and the topics of the entries it kept.
func cutCommitLog(t *testing.T, dir string, keep int) (int64, []string) {
	t.Helper()
	path := filepath.Join(dir, "commitlog", "00000000000000000000")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	var topics []string
	for i := 0; i < keep; i++ {
		if off+8 > int64(len(b)) {
			t.Fatalf("the CommitLog holds fewer than %d entries (%d bytes)", keep, len(b))
		}
		size := int64(binary.BigEndian.Uint32(b[off:]))
		topic, err := message.PeekTopic(b[off : off+size])
		if err != nil {
			t.Fatalf("entry %d at %d: %v", i, off, err)
		}
		topics = append(topics, topic)
		off += size + commitlog.EntryOverhead
	}
	t.Logf("CommitLog %d bytes, cut to %d (after entry %d)", len(b), off, keep)
	if err := os.Truncate(path, off); err != nil {
		t.Fatal(err)
	}
	return off, topics
}

// waitCheckpointed waits until the dispatch checkpoint covers the whole
// CommitLog (the log is flushed every 500 ms, the checkpoint follows the
// flushed end), as on a broker that ran for a while.
func waitCheckpointed(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		fi, err := os.Stat(filepath.Join(dir, "commitlog", "00000000000000000000"))
		if err != nil {
			t.Fatal(err)
		}
		cp, err := meta.LoadCheckpoint(vfs.Default(nil), filepath.Join(dir, "config", "checkpoint"))
		if err == nil && cp.Values[dispatch.CheckpointKey] >= fi.Size() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dispatch checkpoint did not reach the CommitLog's end (%d bytes) within 15 s: %v %v", fi.Size(), cp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// healthzAck posts the acknowledgement of the start-up corrections.
func healthzAck(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/healthz/acknowledge", "text/plain", nil)
	if err != nil {
		t.Fatalf("acknowledge: %v", err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestStartsFromWhatTheCommitLogHolds: five timer messages and three plain
// ones are sent, a group consumes the plain ones and commits, the broker
// stops cleanly, and the CommitLog is cut after its second record (a timer
// message and a plain one), everything else on disk left as it was (the
// dispatch checkpoint, the consume queues, the timer store and the consumer
// offsets all claim more than the log holds). The broker starts on it:
// the two messages the log holds are served (the timer when due), nothing
// of the lost tail ever appears, new sends take the queue and CommitLog
// offsets from the cut end on, the committed group gets the new message,
// and /healthz and wheelmq_store_reconciled_total show the corrections
// until they are acknowledged.
func TestStartsFromWhatTheCommitLogHolds(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	ctx := context.Background()
	topic := processtest.Unique("cut")
	group := processtest.Unique("cg")

	n1 := processtest.Start(t, processtest.Options{Dir: dir})
	processtest.CreateTopic(t, n1, topic, 1)
	p1 := processtest.Producer(t, n1.NamesrvAddr())
	t0 := time.Now()
	due := map[string]time.Time{}
	send := func(body string, after time.Duration) {
		t.Helper()
		m := primitive.NewMessage(topic, []byte(body))
		if after > 0 {
			due[body] = t0.Add(after)
			m.WithDelayTimestamp(due[body])
		}
		if res, err := p1.SendSync(ctx, m); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
	}
	// The first two records survive the cut: a timer due soon and a plain
	// message. The rest is lost: timers due soon and one due later.
	send("timer-kept", 6*time.Second)
	send("plain-kept", 0)
	send("timer-lost-1", 6*time.Second)
	send("plain-lost-1", 0)
	send("timer-lost-2", 7*time.Second)
	send("timer-lost-3", 8*time.Second)
	send("plain-lost-2", 0)
	send("timer-lost-4", 10*time.Second)
	c1, rec1 := processtest.PushConsumer(t, n1.NamesrvAddr(), group, topic, "*")
	if !rec1.WaitFor(3, 30*time.Second) {
		t.Fatalf("the group consumed %d of the 3 plain messages before the stop", rec1.Len())
	}
	if err := c1.Shutdown(); err != nil { // commits its offset (3) to the broker
		t.Fatalf("consumer shutdown: %v", err)
	}
	_ = p1.Shutdown()
	waitCheckpointed(t, dir)
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n1.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	end, kept := cutCommitLog(t, dir, 2)
	if want := []string{"rmq_sys_wheel_timer", topic}; !slices.Equal(kept, want) {
		t.Fatalf("the kept records are of %v, want %v", kept, want)
	}

	n2 := processtest.Start(t, processtest.Options{Dir: dir, Metrics: true})
	processtest.WaitRoute(t, n2.NamesrvAddr(), topic)

	// /healthz names the corrections (and stays 200: the broker serves).
	code, body := healthz(t, n2.MetricsAddr())
	t.Logf("/healthz after the restart: %d\n%s", code, body)
	if code != http.StatusOK || !strings.Contains(body, "reconciled:") ||
		!strings.Contains(body, "dispatch_checkpoint") || !strings.Contains(body, "consumer_offset") {
		t.Fatalf("/healthz %d %q: want 200 naming the dispatch checkpoint and consumer offset corrections", code, body)
	}
	for _, what := range []string{"dispatch_checkpoint", "consume_queue", "timer_enqueue", "consumer_offset"} {
		if v := scrape(t, n2.MetricsAddr(), `wheelmq_store_reconciled_total{what="`+what+`"}`); v < 1 {
			t.Errorf("wheelmq_store_reconciled_total{what=%q} = %v, want >= 1", what, v)
		}
	}

	// New sends continue from the cut end: the next queue offset after the
	// kept plain message, the next CommitLog offset after the kept records.
	p2 := processtest.Producer(t, n2.NamesrvAddr())
	res, err := p2.SendSync(ctx, primitive.NewMessage(topic, []byte("plain-new")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send after the restart: %v %v", res, err)
	}
	if res.QueueOffset != 1 {
		t.Errorf("the new message took queue offset %d, want 1 (after the one the log kept)", res.QueueOffset)
	}
	if _, phys, err := message.ParseOffsetMsgID(res.OffsetMsgID); err != nil || phys != end {
		t.Errorf("the new message is at CommitLog offset %d (%v), want %d (the cut end)", phys, err, end)
	}
	newDue := time.Now().Add(2 * time.Second)
	m := primitive.NewMessage(topic, []byte("timer-new"))
	m.WithDelayTimestamp(newDue)
	if res, err := p2.SendSync(ctx, m); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("timer send after the restart: %v %v", res, err)
	}
	due["timer-new"] = newDue

	// The committed group's offset (3) was clamped to the queue's end (1):
	// it gets the new message, nothing else.
	_, rec2 := processtest.PushConsumer(t, n2.NamesrvAddr(), group, topic, "*")
	// A new group gets everything the log holds, the timers when due.
	_, rec3 := processtest.PushConsumer(t, n2.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	want := map[string]bool{"timer-kept": true, "plain-kept": true, "plain-new": true, "timer-new": true}
	if !rec3.WaitUntil(processtest.HasBodies(want, 0), 30*time.Second) {
		t.Fatalf("the new group got %v, want %v", bodies(rec3.Snapshot()), want)
	}
	// Every lost timer is past due by now plus a margin: none may appear.
	quiet := t0.Add(12 * time.Second)
	for time.Now().Before(quiet) && !slices.ContainsFunc(rec3.Snapshot(), func(m *primitive.MessageExt) bool {
		return strings.Contains(string(m.Body), "lost")
	}) {
		time.Sleep(100 * time.Millisecond)
	}
	got := rec3.Snapshot()
	sameSet(t, bodies(got), []string{"timer-kept", "plain-kept", "plain-new", "timer-new"})
	for _, m := range got {
		if at, ok := due[string(m.Body)]; ok && m.StoreTimestamp < at.UnixMilli() {
			t.Errorf("%s delivered early: stored at %d, due %d", m.Body, m.StoreTimestamp, at.UnixMilli())
		}
	}
	// The wheel's entries of the four lost timers were dropped when they
	// came due (their records are not in the log), each one a correction.
	waitMetric(t, n2.MetricsAddr(), `wheelmq_store_reconciled_total{what="timer_entry"}`, func(v float64) bool { return v == 4 })
	if !rec2.WaitUntil(processtest.HasBodies(map[string]bool{"plain-new": true}, 0), 15*time.Second) {
		t.Fatalf("the committed group got %v, want plain-new (its offset clamped to the queue's end)", bodies(rec2.Snapshot()))
	}
	for _, m := range rec2.Snapshot() {
		if strings.HasPrefix(string(m.Body), "plain-") && string(m.Body) != "plain-new" {
			t.Errorf("the committed group got %s again", m.Body)
		}
	}

	// Acknowledged, /healthz is plain "ok" again; the counters stay.
	if code := healthzAck(t, n2.MetricsAddr()); code != http.StatusOK {
		t.Fatalf("acknowledge answered %d", code)
	}
	if code, body := healthz(t, n2.MetricsAddr()); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz after the acknowledgement: %d %q", code, body)
	}
	if v := scrape(t, n2.MetricsAddr(), "wheelmq_store_reconciled_total"); v < 4 {
		t.Errorf("wheelmq_store_reconciled_total = %v after the acknowledgement, want the counts kept", v)
	}
}

// TestEpochsPastTheLogDropped: replication epoch entries that start past
// the recovered CommitLog's end (here an empty log) are dropped, the one
// at the end kept, and the drop is a correction; a second pass finds
// nothing.
func TestEpochsPastTheLogDropped(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	epochs, err := ha.OpenEpochs(st.FS, filepath.Join(dir, "ha"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []ha.Epoch{{Epoch: 1, Start: 0}, {Epoch: 2, Start: 500}, {Epoch: 3, Start: 900}} {
		if err := epochs.Append(e.Epoch, e.Start); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := process.ReconcileEpochs(st, epochs, zerolog.Nop()); err != nil {
			t.Fatal(err)
		}
	}
	if got := epochs.Entries(); !slices.Equal(got, []ha.Epoch{{Epoch: 1, Start: 0}}) {
		t.Fatalf("epochs %v, want [{1 0}]", got)
	}
	reopened, err := ha.OpenEpochs(st.FS, filepath.Join(dir, "ha"))
	if err != nil || len(reopened.Entries()) != 1 {
		t.Fatalf("epoch file after the reconcile: %v %v", reopened.Entries(), err)
	}
	p := st.Corrections.Pending()
	if len(p) != 1 || p[0].What != storage.FixEpoch || p[0].Count != 1 || p[0].Last.From != 900 || p[0].Last.Dropped != 2 {
		t.Fatalf("corrections %+v", p)
	}
}
