package pop

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestModesFollowDeliveries: the mode table counts the engine's own
// deliveries in flight per (group, topic) as they are popped, acked,
// changed and expired, and a Reload (promotion) forgets them and makes
// pulls wait until the journal is read again. A fresh broker with no
// journal never makes pulls wait.
func TestModesFollowDeliveries(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q, err := st.Queues.Queue("T", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		b, err := (&message.Record{Topic: "T", QueueOffset: int64(i), Body: []byte("x")}).Encode(nil)
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
	if err := st.CommitLog.Sync(); err != nil {
		t.Fatal(err)
	}
	st.Dispatched.Store(st.DurableLogEnd())
	now := time.UnixMilli(1_000_000)
	e := New(Options{Store: st, Now: func() time.Time { return now }, Logger: zerolog.Nop()})
	tb := e.Modes()
	if tb.Recovering() {
		t.Fatal("a broker without a POP journal makes pulls wait")
	}
	if !e.recovered() {
		t.Fatal("not recovered")
	}
	k := qkey{"G", "T", 0}
	e.queues[k] = newQState(0)
	res := e.collect(&Pop{Group: "G", Topic: "T", QueueID: 0, MaxNums: 32, InvisibleMs: 10_000, Filter: pull.Filter{All: true}}, []int32{0})
	if res.Count != 3 || tb.InFlight("G", "T") != 3 {
		t.Fatalf("popped %d, table counts %d in flight; want 3, 3", res.Count, tb.InFlight("G", "T"))
	}
	if ref := tb.PullAllowed("G", "T", 0, now); ref == nil {
		t.Fatal("a pull with 3 deliveries in flight allowed")
	}
	h := Handle{PopTime: res.PopTime, InvisibleTime: 10_000, QueueID: 0, Offset: 0}
	if code, remark, _ := e.ackHandle("G", "T", h); code != CodeSuccess {
		t.Fatalf("ack: %d %s", code, remark)
	}
	if n := tb.InFlight("G", "T"); n != 2 {
		t.Fatalf("%d in flight after an ack, want 2", n)
	}
	// Offset 1 moved an hour on: the group is held past offset 2's deadline.
	e.change(&Change{Group: "G", Topic: "T", QueueID: 0, ExtraInfo: Handle{StartOffset: 1, PopTime: res.PopTime,
		InvisibleTime: 10_000, BrokerName: "", QueueID: 0, Offset: 1}.String(), Offset: 1, InvisibleMs: time.Hour.Milliseconds(),
		Reply: func(code int32, remark string, _ Handle) {
			if code != CodeSuccess {
				t.Fatalf("change: %d %s", code, remark)
			}
		}})
	now = now.Add(11 * time.Second)
	if !e.expireOne(k, 2, res.PopTime, now.UnixMilli(), false) {
		t.Fatal("offset 2 did not expire past its deadline")
	}
	if n := tb.InFlight("G", "T"); n != 1 {
		t.Fatalf("%d in flight after an expiry, want 1", n)
	}
	if ref := tb.PullAllowed("G", "T", 0, now); ref == nil {
		t.Fatal("a pull allowed while the changed delivery is in flight")
	}
	end := st.DurableLogEnd()
	st.Dispatched.Store(0) // the promoted broker's consume queues lag its CommitLog
	if tb.ReloadedFor() != -1 {
		t.Fatalf("reloaded for epoch %d before any reload, want -1", tb.ReloadedFor())
	}
	e.reload(7)
	if tb.ReloadedFor() != 7 {
		t.Fatalf("reloaded for epoch %d after a reload at epoch 7", tb.ReloadedFor())
	}
	if n := tb.InFlight("G", "T"); n != 0 {
		t.Fatalf("%d in flight after a reload, want 0", n)
	}
	if e.replayOK || !tb.Recovering() {
		t.Fatalf("after a reload with the queues behind: replayed %v, recovering %v; want false, true", e.replayOK, tb.Recovering())
	}
	if ref := tb.PullAllowed("G2", "T", 0, now); ref == nil || !ref.Busy {
		t.Fatalf("a pull while the journal is read again: %v, want busy", ref)
	}
	st.Dispatched.Store(end)
	if !e.recovered() || tb.Recovering() {
		t.Fatalf("caught up: recovered %v, recovering %v", e.replayOK, tb.Recovering())
	}
}

// TestReloadWaitsForModes: after a promotion (Reload) the engine reads its
// journal, and pulls and pops of every group are served, only once the
// metadata log has applied every record below the CommitLog's end
// (Options.ModesApplied): until then the table answers busy, even for a
// group whose mode says PULL (the old master may have set it to POP last).
// Past maxRecoverWait the engine goes on with the modes it has.
func TestReloadWaitsForModes(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.UnixMilli(1_000_000)
	applied := false
	var asked []int64
	e := New(Options{Store: st, Now: func() time.Time { return now }, Logger: zerolog.Nop(),
		ModesApplied: func(end int64) (bool, error) { asked = append(asked, end); return applied, nil }})
	tb := e.Modes()
	if !e.recovered() || tb.ModesPending() {
		t.Fatalf("a start does not wait for the metadata log: recovered %v, pending %v", e.replayOK, tb.ModesPending())
	}
	if err := e.putModes([]meta.RequestMode{{ConsumerGroup: "GP", Topic: "T", Mode: meta.RequestModePull}}); err != nil {
		t.Fatal(err)
	}
	for round, give := range []string{"applied", "deadline"} {
		applied, asked = false, nil
		e.reload(int64(3 + round))
		if e.recovered() || !tb.ModesPending() {
			t.Fatalf("%s: recovered %v, pending %v before the metadata log applied", give, e.replayOK, tb.ModesPending())
		}
		if len(asked) == 0 || asked[len(asked)-1] != st.DurableLogEnd() {
			t.Fatalf("%s: asked %v, want the CommitLog's end %d", give, asked, st.DurableLogEnd())
		}
		for _, g := range []string{"G", "GP"} {
			if ref := tb.PullAllowed(g, "T", 0, now); ref == nil || !ref.Busy {
				t.Fatalf("%s: a pull of %s while the modes are pending: %v, want busy", give, g, ref)
			}
			if ref := tb.PopAllowed(g, "T", now); ref == nil || !ref.Busy {
				t.Fatalf("%s: a pop of %s while the modes are pending: %v, want busy", give, g, ref)
			}
		}
		switch give {
		case "applied":
			now = now.Add(time.Second)
			applied = true
		case "deadline":
			now = now.Add(maxRecoverWait)
		}
		if !e.recovered() || tb.ModesPending() || tb.Recovering() {
			t.Fatalf("%s: recovered %v, pending %v, recovering %v", give, e.replayOK, tb.ModesPending(), tb.Recovering())
		}
		if ref := tb.PullAllowed("GP", "T", 0, now); ref != nil {
			t.Fatalf("%s: a pull of a group set to PULL once recovered: %v", give, ref)
		}
	}
}
