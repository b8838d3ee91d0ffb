package process_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// fakeClock is the retention clock of a test: the real time until set.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time {
	if ms := c.ms.Load(); ms != 0 {
		return time.UnixMilli(ms)
	}
	return time.Now()
}

// runRetention runs one retention round now and returns its report.
func runRetention(t testing.TB, n *process.Node) retention.Report {
	t.Helper()
	ch := make(chan retention.Report, 1)
	n.Broker().Pipeline().Stage(retention.StageName).Send(&retention.RunNow{Reply: func(r retention.Report) { ch <- r }})
	select {
	case r := <-ch:
		if r.Err != nil {
			t.Fatalf("retention round: %v", r.Err)
		}
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("retention round did not end within 30 s")
	}
	return retention.Report{}
}

// queueOffsetCall asks the broker for a queue's min offset or searches it
// by time.
func queueOffsetCall(t *testing.T, n *process.Node, code int32, topic string, ts int64) int64 {
	t.Helper()
	ext := map[string]string{"topic": topic, "queueId": "0"}
	if code == remoting.SearchOffsetByTimestamp {
		ext["timestamp"] = strconv.FormatInt(ts, 10)
	}
	resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(code, ext, nil))
	off, err := strconv.ParseInt(resp.Field("offset"), 10, 64)
	if resp.Code != remoting.Success || err != nil {
		t.Fatalf("request %d: code %d %s offset %q", code, resp.Code, resp.Remark, resp.Field("offset"))
	}
	return off
}

// TestRetentionKeepsPendingTimers fills small CommitLog segments with old
// messages and with the messages of timers due after the retention would
// have deleted them, then moves the retention clock past the window: the
// old segments are deleted, the timers are rolled forward and still
// delivered on time (never early, once), newer messages stay, a consumer
// whose offset fell behind continues from the oldest kept message, and
// GET_MIN_OFFSET / SEARCH_OFFSET_BY_TIMESTAMP answer from what is kept,
// also after a restart.
func TestRetentionKeepsPendingTimers(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	clock := &fakeClock{}
	const window = time.Hour
	mutate := func(c *pipeline.Config) {
		c.SegmentSize, c.MaxMessageSize = 64<<10, 16<<10
		c.Retention, c.RetentionAt = window, "any"
		c.RetentionInterval = time.Hour // rounds run when the test asks
		c.RetentionDeleteInterval = -1
		c.Clock = clock.now
		// A small wheel: timers due more than ~1 s ahead wait in the far wheel.
		c.TimerGeometry = &pipeline.TimerGeometry{SlotMs: 1, NearSlots: 4096, FarSlotMs: 500, CancelWindow: 200 * time.Millisecond}
		c.MaxTimerDelay = time.Hour
	}
	n := processtest.Start(t, processtest.Options{Dir: dir, Mutate: mutate})
	topic, timerTopic := processtest.Unique("ret"), processtest.Unique("rettimer")
	processtest.CreateTopic(t, n, topic, 1)
	processtest.CreateTopic(t, n, timerTopic, 1)
	_, timersGot := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cgt"), timerTopic, "*")
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()

	// Timers due 15 s from now: their messages land in the first segments.
	const timers = 20
	due := map[string]int64{}
	var timerOffsets []int64
	base := time.Now().Add(15 * time.Second)
	for i := 0; i < timers; i++ {
		at := base.Add(time.Duration(i) * 50 * time.Millisecond)
		m := primitive.NewMessage(timerTopic, []byte(fmt.Sprintf("timer-%d", i)))
		m.WithDelayTimestamp(at)
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("timer send %d: %v %v", i, res, err)
		}
		_, off, err := message.ParseOffsetMsgID(res.OffsetMsgID)
		if err != nil {
			t.Fatal(err)
		}
		due[string(m.Body)] = at.UnixMilli()
		timerOffsets = append(timerOffsets, off)
	}
	body := make([]byte, 1024)
	send := func(prefix string, count int) {
		for i := 0; i < count; i++ {
			copy(body, fmt.Sprintf("%s-%05d-", prefix, i))
			res, err := p.SendSync(ctx, primitive.NewMessage(topic, body))
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("send %s %d: %v %v", prefix, i, res, err)
			}
		}
	}
	const oldCount, newCount = 600, 100
	send("old", oldCount)
	time.Sleep(20 * time.Millisecond) // store timestamps of "new" are later than every "old" one
	newFrom := time.Now()
	send("new", newCount)
	// A group that consumed only the first 5 old messages.
	behind := processtest.Unique("cgbehind")
	resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": behind, "topic": topic, "queueId": "0", "commitOffset": "5"}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("commit offset: %d %s", resp.Code, resp.Remark)
	}

	// The old messages are now older than the window, the new ones not.
	clock.ms.Store(newFrom.Add(window).UnixMilli() - 1)
	var total retention.Report
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := runRetention(t, n)
		total.Deleted += r.Deleted
		total.Rolled += r.Rolled
		if r.Deleted == 0 && r.Rolled == 0 && r.HeldBy == "" {
			break // nothing more wanted
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention still held after 20 s: %+v (so far %+v)", r, total)
		}
		if r.Deleted == 0 && r.Rolled == 0 {
			time.Sleep(200 * time.Millisecond) // a pin (the dispatch checkpoint) moves every second
		}
	}
	cl := n.Broker().Store().CommitLog
	t.Logf("retention: %d segments deleted, %d timers rolled, CommitLog min %d max %d",
		total.Deleted, total.Rolled, cl.MinOffset(), cl.MaxOffset())
	if total.Rolled != timers {
		t.Fatalf("rolled %d timers, want %d", total.Rolled, timers)
	}
	for _, off := range timerOffsets {
		if off >= cl.MinOffset() {
			t.Fatalf("timer message at %d still kept (CommitLog min %d): its segment was not freed", off, cl.MinOffset())
		}
	}
	if total.Deleted < 5 {
		t.Fatalf("only %d segments deleted", total.Deleted)
	}

	// The queue's minimum is the oldest kept message.
	kept := queueOffsetCall(t, n, remoting.GetMinOffset, topic, 0)
	if kept <= 5 || kept >= oldCount {
		t.Fatalf("min offset %d after retention, want inside the old messages", kept)
	}
	if got := queueOffsetCall(t, n, remoting.SearchOffsetByTimestamp, topic, 0); got != kept {
		t.Fatalf("search by timestamp 0: %d, want the minimum %d", got, kept)
	}
	if got := queueOffsetCall(t, n, remoting.SearchOffsetByTimestamp, topic, newFrom.UnixMilli()); got != oldCount {
		t.Fatalf("search by the first new timestamp: %d, want %d", got, oldCount)
	}
	pull := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup": behind, "topic": topic, "queueId": "0", "queueOffset": "5", "maxMsgNums": "32",
		"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"}, nil))
	if pull.Code != remoting.PullOffsetMoved || pull.Remark != "OFFSET_TOO_SMALL" ||
		pull.Field("nextBeginOffset") != strconv.FormatInt(kept, 10) {
		t.Fatalf("pull below the minimum: code %d %q next %s", pull.Code, pull.Remark, pull.Field("nextBeginOffset"))
	}

	// The group that fell behind continues from the oldest kept message.
	_, got := processtest.PushConsumer(t, n.NamesrvAddr(), behind, topic, "*")
	want := oldCount - int(kept) + newCount
	if !got.WaitFor(want, 60*time.Second) {
		t.Fatalf("consumer behind the window got %d of %d kept messages", got.Len(), want)
	}
	seen := map[string]bool{}
	for _, m := range got.Snapshot() {
		if m.QueueOffset < kept {
			t.Fatalf("consumed offset %d below the minimum %d", m.QueueOffset, kept)
		}
		seen[string(m.Body[:10])] = true
	}
	for i := int(kept); i < oldCount; i++ {
		if !seen[fmt.Sprintf("old-%05d-", i)] {
			t.Fatalf("kept message old-%05d not consumed", i)
		}
	}
	for i := 0; i < newCount; i++ {
		if !seen[fmt.Sprintf("new-%05d-", i)] {
			t.Fatalf("new message %d not consumed", i)
		}
	}

	// Every timer arrives once, never early, with its roll counted.
	if !timersGot.WaitFor(timers, 40*time.Second) {
		t.Fatalf("%d of %d timers delivered", timersGot.Len(), timers)
	}
	time.Sleep(300 * time.Millisecond)
	tm := timersGot.Snapshot()
	if len(tm) != timers {
		t.Fatalf("%d timer deliveries, want %d (duplicates?)", len(tm), timers)
	}
	for _, m := range tm {
		want := due[string(m.Body)]
		if m.StoreTimestamp < want {
			t.Fatalf("%s delivered early: stored %d, due %d", m.Body, m.StoreTimestamp, want)
		}
		if late := m.StoreTimestamp - want; late > 3000 {
			t.Fatalf("%s delivered %d ms late", m.Body, late)
		}
		if m.GetProperty("TIMER_ROLL_TIMES") != "1" {
			t.Fatalf("%s: TIMER_ROLL_TIMES %q, want 1", m.Body, m.GetProperty("TIMER_ROLL_TIMES"))
		}
	}
	if v := metricValue(t, n, "wheelmq_timer_rewritten_total"); v != timers {
		t.Fatalf("wheelmq_timer_rewritten_total %v, want %d", v, timers)
	}

	// After a restart the minimum is the same (recomputed from the CommitLog).
	ctxStop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(ctxStop); err != nil {
		t.Fatal(err)
	}
	n2 := processtest.Start(t, processtest.Options{Dir: dir, Mutate: mutate})
	if got := queueOffsetCall(t, n2, remoting.GetMinOffset, topic, 0); got != kept {
		t.Fatalf("min offset after restart %d, want %d", got, kept)
	}
}

// metricValue sums the samples of a counter or gauge family in the node's
// registry (0 when it has none yet).
func metricValue(t testing.TB, n *process.Node, name string) float64 {
	t.Helper()
	families, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			} else {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestRetentionStageRestartsMidRound fails the retention stage between two
// deletions: the round's caller gets the error, the supervisor restarts the
// stage, the next round finishes the job, and the store stays consistent
// (the queue's minimum follows the CommitLog's, also after a restart).
func TestRetentionStageRestartsMidRound(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	clock := &fakeClock{}
	var deletions atomic.Int64
	mutate := func(c *pipeline.Config) {
		c.SegmentSize, c.MaxMessageSize = 64<<10, 16<<10
		c.Retention, c.RetentionAt = time.Hour, "any"
		c.RetentionInterval, c.RetentionDeleteInterval = time.Hour, -1
		c.Clock = clock.now
		c.RetentionFault = func() {
			if deletions.Add(1) == 2 {
				panic("injected: between two segment deletions")
			}
		}
	}
	n := processtest.Start(t, processtest.Options{Dir: dir, Mutate: mutate})
	topic := processtest.Unique("retfault")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	body := make([]byte, 2048)
	for i := 0; i < 200; i++ {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
			t.Fatal(err)
		}
	}
	clock.ms.Store(time.Now().Add(2 * time.Hour).UnixMilli())
	var first retention.Report
	for tries := 0; ; tries++ {
		ch := make(chan retention.Report, 1)
		n.Broker().Pipeline().Stage(retention.StageName).Send(&retention.RunNow{Reply: func(r retention.Report) { ch <- r }})
		select {
		case first = <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("the round was not answered")
		}
		if first.Err != nil || first.Deleted > 0 || first.HeldBy == "" || tries > 100 {
			break
		}
		time.Sleep(100 * time.Millisecond) // the dispatch checkpoint and the transaction watermark move every second
	}
	if first.Err == nil || first.Deleted != 1 {
		t.Fatalf("round with a failure between deletions: %+v", first)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if r := runRetention(t, n); r.Deleted == 0 && r.HeldBy == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("retention did not settle after the restart")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl := n.Broker().Store().CommitLog
	if segs := len(cl.Segments()); segs != 1 {
		t.Fatalf("%d segments left, want only the active one", segs)
	}
	kept := queueOffsetCall(t, n, remoting.GetMinOffset, topic, 0)
	ctxStop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(ctxStop); err != nil {
		t.Fatal(err)
	}
	n2 := processtest.Start(t, processtest.Options{Dir: dir, Mutate: mutate})
	if got := queueOffsetCall(t, n2, remoting.GetMinOffset, topic, 0); got != kept || kept == 0 {
		t.Fatalf("min offset %d after restart, %d before", got, kept)
	}
	pull := processtest.Invoke(t, n2.BrokerAddr(), remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup": "g", "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(kept, 10),
		"maxMsgNums": "4", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
		"subVersion": "0"}, nil))
	if pull.Code != remoting.Success || len(pull.Body) == 0 {
		t.Fatalf("pull at the minimum after restart: code %d %q", pull.Code, pull.Remark)
	}
}
