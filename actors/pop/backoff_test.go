package pop

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// backoffEngine is an engine over a store whose queue T:0 holds n
// messages, on a fake clock (ms since the epoch), with group "P" under
// the policy customized 300 ms, 600 ms and 3 attempts, and group "N"
// without a policy.
func backoffEngine(t *testing.T, n int) (*Engine, *int64) {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	q, err := st.Queues.Queue("T", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b, err := (&message.Record{Topic: "T", QueueOffset: int64(i), Body: fmt.Appendf(nil, "m%d", i)}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		offs, err := st.CommitLog.Append([][]byte{b})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Append(consumequeue.Unit{Offset: offs[0], Size: int32(len(b)), TagsCode: message.TagsHashCode("")}); err != nil {
			t.Fatal(err)
		}
	}
	policy, err := meta.ParseRetryPolicy([]byte(`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[300,600]}}`))
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1_000_000)
	e := New(Options{Store: st, Logger: zerolog.Nop(), Now: func() time.Time { return time.UnixMilli(now) },
		MaxAttempts: func(string) int32 { return 3 },
		RetryPolicy: func(group string) (meta.RetryPolicy, bool) { return policy, group == "P" }})
	e.replayOK = true
	return e, &now
}

// popNow pops up to 32 messages of group g (invisible ms) and returns
// them.
func popNow(t *testing.T, e *Engine, g string, invisible int64) []Delivered {
	t.Helper()
	var res *Result
	e.pop(&Pop{Group: g, Topic: "T", QueueID: 0, Queues: 1, MaxNums: 32, InvisibleMs: invisible,
		Filter: pull.Filter{All: true}, Reply: func(r *Result) { res = r }}, nil)
	if res == nil {
		t.Fatal("pop not answered")
	}
	return res.Msgs
}

// TestExpiryBacksOffByGroupPolicy: under group P's policy (customized
// 300 ms, 600 ms; 3 attempts) an un-acked delivery with a 100 ms
// invisible time comes back 100 + 300 ms after its pop, the next 100 +
// 600 ms after its, not a millisecond earlier, its handle refused
// meanwhile; the third expiry goes to the dead-letter queue without a
// back-off. A group without a policy gets the message back at the
// deadline, and a deadline the consumer set (a change) is not backed off.
func TestExpiryBacksOffByGroupPolicy(t *testing.T) {
	e, now := backoffEngine(t, 1)
	k := qkey{"P", "T", 0}
	expect := func(attempt int32, at int64) {
		t.Helper()
		*now = at - 1
		e.expire(nil)
		if got := popNow(t, e, "P", 100); len(got) != 0 {
			t.Fatalf("attempt %d delivered at %d, 1 ms before %d", attempt, *now, at)
		}
		*now = at
		e.expire(nil)
		got := popNow(t, e, "P", 100)
		if len(got) != 1 || got[0].Attempt != attempt || got[0].Record.ReconsumeTimes != attempt-1 {
			t.Fatalf("at %d: %+v, want attempt %d", at, got, attempt)
		}
	}
	t0 := *now
	first := popNow(t, e, "P", 100)
	if len(first) != 1 {
		t.Fatalf("first pop: %d messages", len(first))
	}
	*now = t0 + 100 // the deadline: the back-off starts
	e.expire(nil)
	if d := e.queues[k].inflight[0]; !d.backoff || d.deadline() != t0+400 {
		t.Fatalf("after the deadline: %+v, want backing off until %d", d, t0+400)
	}
	if code, _, _ := e.ackHandle("P", "T", Handle{PopTime: t0 + 100, InvisibleTime: 300, QueueID: 0, Offset: 0}); code == CodeSuccess {
		t.Fatal("a back-off's own times acked the message")
	}
	if got := e.inFlightOf(&InFlight{Group: "P"})[QueueKey{"T", 0}]; got.InFlight != 0 || got.Retrying != 1 {
		t.Fatalf("in flight while backing off: %+v", got)
	}
	expect(2, t0+400)
	expect(3, t0+400+100+600)
	*now = t0 + 1100 + 100 // the last attempt's deadline: dead-letter, no back-off
	e.expire(nil)
	if n := e.m.BackedOff.Load(); n != 2 {
		t.Fatalf("backed off %d times, want 2", n)
	}
	if _, in := e.queues[k].inflight[0]; in {
		t.Fatal("the last attempt was held back")
	}
	if n := e.m.Expiries.Load(); n != 3 {
		t.Fatalf("expiries %d, want 3 (one per failed delivery)", n)
	}

	// No policy: back at the deadline.
	t1 := *now
	if got := popNow(t, e, "N", 100); len(got) != 1 {
		t.Fatalf("group N: %d messages", len(got))
	}
	*now = t1 + 100
	e.expire(nil)
	if got := popNow(t, e, "N", 100); len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("group N at its deadline: %+v", got)
	}
}

// TestChangedDeadlineNotBackedOff: a consumer's change of invisible time
// (a v5 PushConsumer's nack carries the policy's delay itself) is
// followed to the millisecond; the back-off applies only to a deadline
// set by a pop.
func TestChangedDeadlineNotBackedOff(t *testing.T) {
	e, now := backoffEngine(t, 1)
	t0 := *now
	got := popNow(t, e, "P", 100)
	if len(got) != 1 {
		t.Fatalf("pop: %d", len(got))
	}
	*now = t0 + 10
	var code int32
	e.change(&Change{Group: "P", Topic: "T", Handle: &got[0].Handle, InvisibleMs: 50,
		Reply: func(c int32, _ string, _ Handle) { code = c }})
	if code != CodeSuccess {
		t.Fatalf("change: %d", code)
	}
	*now = t0 + 59
	e.expire(nil)
	if early := popNow(t, e, "P", 100); len(early) != 0 {
		t.Fatal("delivered before the changed deadline")
	}
	*now = t0 + 60
	e.expire(nil)
	if again := popNow(t, e, "P", 100); len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("at the changed deadline: %+v", again)
	}
}

// TestBackoffSurvivesReplay: the journal's entries rebuild a back-off
// (a "B" entry) with its end, and a pop entry found past its deadline
// without one (a crash before it was stored) is backed off to the same
// end (the jitter's draw is fixed by the delivery); a change ("C") is
// visible at its deadline.
func TestBackoffSurvivesReplay(t *testing.T) {
	e, now := backoffEngine(t, 3)
	k := qkey{"P", "T", 0}
	t0 := *now
	e.replayed = map[qkey][]entry{k: {
		{kind: 'P', key: k, off: 0, popTime: t0, invisible: 100, attempt: 1, jOff: 0},
		{kind: 'P', key: k, off: 1, popTime: t0, invisible: 100, attempt: 1, jOff: 1},
		{kind: 'P', key: k, off: 2, popTime: t0, invisible: 100, attempt: 1, jOff: 2},
		{kind: 'B', key: k, off: 0, popTime: t0 + 100, invisible: 300, attempt: 1, jOff: 3},
		{kind: 'C', key: k, off: 2, popTime: t0 + 10, invisible: 90, attempt: 1, jOff: 4},
	}}
	*now = t0 + 250
	s := newQState(0)
	e.queues[k] = s
	e.applyReplayed(k, s)
	for _, off := range []int64{0, 1} {
		if d := s.inflight[off]; !d.backoff || d.deadline() != t0+400 {
			t.Fatalf("offset %d after the replay: %+v, want backing off until %d", off, d, t0+400)
		}
	}
	if a, ok := s.visible[2]; !ok || a != 2 {
		t.Fatalf("changed delivery after the replay: visible %v (%d)", ok, a)
	}
	*now = t0 + 399
	e.expire(nil)
	if len(s.visible) != 1 {
		t.Fatalf("back-offs ended early: visible %v", s.visible)
	}
	*now = t0 + 400
	e.expire(nil)
	if len(s.visible) != 3 {
		t.Fatalf("back-offs not ended at %d: visible %v", *now, s.visible)
	}
}
