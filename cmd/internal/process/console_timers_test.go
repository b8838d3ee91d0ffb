package process_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestTopicTimersListed sends timers with the official Go client (the
// delivery-time property) on two topics, lets one fire, cancels one, and
// holds a POP invisibility deadline on the wheel: the listing of the
// first topic pages through exactly its other timers in due order, the
// per-topic counts match, and the timer page's pending figures leave the
// POP deadline out.
func TestTopicTimersListed(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	cb := process.ConsoleOf(n)
	a, b, c := processtest.Unique("ttA"), processtest.Unique("ttB"), processtest.Unique("ttPop")
	for _, tp := range []string{a, b, c} {
		processtest.CreateTopic(t, n, tp, 1)
	}
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), a, "*")
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	send := func(topic, body string, at time.Time, tag string, keys ...string) *primitive.SendResult {
		t.Helper()
		m := primitive.NewMessage(topic, []byte(body))
		m.WithDelayTimestamp(at)
		m.WithTag(tag)
		m.WithKeys(keys)
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		return res
	}
	base := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	var keep []string // the uniq keys of A's timers that stay, in due order
	var dues []int64
	for i := range 5 {
		at := base.Add(time.Duration(i) * time.Minute)
		keep = append(keep, send(a, fmt.Sprint("keep-", i), at, "TagA", fmt.Sprint("ka-", i)).MsgID)
		dues = append(dues, at.UnixMilli())
	}
	cancelMe := send(a, "cancel-me", base.Add(90*time.Second), "TagA", "kc")
	send(a, "fire", time.Now().Add(1500*time.Millisecond), "TagF")
	for i := range 3 {
		send(b, fmt.Sprint("b-", i), base.Add(time.Hour), "TagB")
	}
	// A plain message popped with a long invisible time: a POP deadline.
	if _, err := p.SendSync(ctx, primitive.NewMessage(c, []byte("popped"))); err != nil {
		t.Fatal(err)
	}
	if code, got := doPop(t, n.BrokerAddr(), popReq(processtest.Unique("pg"), c, 0, 600_000, 5_000, "*")); code != remoting.Success || len(got) != 1 {
		t.Fatalf("pop: code %d, %d messages", code, len(got))
	}

	if !rec.WaitFor(1, 20*time.Second) {
		t.Fatal("the short timer never fired")
	}
	counts := func(wantA int64) console.TimerCounts {
		t.Helper()
		var cn console.TimerCounts
		deadline := time.Now().Add(20 * time.Second)
		for {
			var err error
			if cn, err = cb.TimerCounts(ctx, console.Credentials{}); err != nil {
				t.Fatal(err)
			}
			if cn.Topics[a] == wantA && cn.Topics[b] == 3 && cn.PopDeadlines >= 1 {
				return cn
			}
			if time.Now().After(deadline) {
				t.Fatalf("counts %v (POP deadlines %d), want %s=%d %s=3 and a POP deadline", cn.Topics, cn.PopDeadlines, a, wantA, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	counts(6)
	if err := cb.CancelTimer(ctx, console.Credentials{}, a, cancelMe.OffsetMsgID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	cn := counts(5)
	if !cn.Complete || cn.Topics[c] != 0 {
		t.Fatalf("counts %+v: want complete, none for the POP topic", cn)
	}

	// Page through A's timers two at a time.
	var got []string
	cursor, pages := "", 0
	for {
		pg, err := cb.TopicTimers(ctx, console.Credentials{}, a, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, tm := range pg.Timers {
			i := len(got)
			if i >= len(keep) || tm.Due.UnixMilli() != dues[i] || tm.Tags != "TagA" || !slices.Equal(tm.Keys, []string{fmt.Sprint("ka-", i)}) ||
				tm.OffsetMsgID == "" || tm.BodySize != len(fmt.Sprint("keep-", i)) {
				t.Fatalf("timer %d listed as %+v", i, tm)
			}
			got = append(got, tm.UniqKey)
		}
		if !pg.More {
			break
		}
		if cursor = pg.Next; pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if !slices.Equal(got, keep) || pages != 3 {
		t.Fatalf("listed %v in %d pages, want %v in 3", got, pages, keep)
	}
	if _, err := cb.TopicTimers(ctx, console.Credentials{}, a, "not-a-cursor", 2); err == nil {
		t.Fatal("a malformed cursor was taken")
	}

	// The timer page counts the 8 client timers; the wheel holds the POP
	// deadline too.
	tm, err := cb.Timers(ctx, []int64{60_000, 3_600_000})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, v := range tm.Counts {
		sum += v
	}
	if tm.Pending != 8 || sum != 8 || tm.PopPending < 1 || !tm.PendingExact {
		t.Fatalf("timer page: pending %d, histogram %v, POP deadlines %d", tm.Pending, tm.Counts, tm.PopPending)
	}
	o, err := cb.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.TimersPending != 8 || o.PopPending < 1 {
		t.Fatalf("overview: %v timers pending, %v POP deadlines", o.TimersPending, o.PopPending)
	}
}
