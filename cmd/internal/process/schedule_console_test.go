package process_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	wheelsched "github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestScheduleListedAndCancelledFromConsole: the console's pending timers
// of a topic show a recurring timer once, with its schedule, the number
// and due time of its next fire; the console's Cancel with the listed id
// (that of the pending next-fire record, not the send's) stops it: it
// leaves the list and nothing due more than a period after the cancel
// arrives.
func TestScheduleListedAndCancelledFromConsole(t *testing.T) {
	t.Parallel() // waits more than it computes
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	cb := process.ConsoleOf(n)
	topic := processtest.Unique("schedconsole")
	processtest.CreateTopic(t, n, topic, 1)
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	m := primitive.NewMessage(topic, []byte("tick"))
	m.WithProperty(wheelsched.Prop, "@every 1s")
	res, err := p.SendSync(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	listed := func() []console.PendingTimer {
		t.Helper()
		pg, err := cb.TopicTimers(ctx, console.Credentials{}, topic, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		return pg.Timers
	}
	var row console.PendingTimer
	deadline := time.Now().Add(20 * time.Second)
	for {
		ts := listed()
		if len(ts) > 1 {
			t.Fatalf("a schedule listed %d times: %+v", len(ts), ts)
		}
		if len(ts) == 1 && ts[0].Seq >= 3 {
			row = ts[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no schedule row past its second fire: %+v", ts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if row.Schedule != "@every 1s" || row.UniqKey != res.MsgID || row.OffsetMsgID == res.OffsetMsgID {
		t.Fatalf("schedule row %+v (sent %s / %s)", row, res.MsgID, res.OffsetMsgID)
	}
	fires := map[int64]int64{} // seq -> due
	for _, f := range rec.Snapshot() {
		seq, _ := strconv.ParseInt(f.GetProperty(wheelsched.PropSeq), 10, 64)
		due, _ := strconv.ParseInt(f.GetProperty(wheelsched.PropFireMs), 10, 64)
		fires[seq] = due
	}
	if first, ok := fires[1]; ok && row.Due.UnixMilli() != first+(row.Seq-1)*1000 {
		t.Fatalf("fire %d listed due %d, want %d", row.Seq, row.Due.UnixMilli(), first+(row.Seq-1)*1000)
	}
	if err := cb.CancelTimer(ctx, console.Credentials{}, topic, row.OffsetMsgID); err != nil {
		t.Fatalf("cancel from the console: %v", err)
	}
	answered := time.Now().UnixMilli()
	deadline = time.Now().Add(20 * time.Second)
	for len(listed()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled schedule is still listed: %+v", listed())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // fires that must not come
	for _, f := range rec.Snapshot() {
		if due, _ := strconv.ParseInt(f.GetProperty(wheelsched.PropFireMs), 10, 64); due > answered+1000 {
			t.Fatalf("fire %s due %d, after the cancel at %d + 1 period", f.GetProperty(wheelsched.PropSeq), due, answered)
		}
	}
}
