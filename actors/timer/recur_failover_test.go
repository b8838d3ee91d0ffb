package timer

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// putSchedule stores a recurring timer's first record through the writer.
func (n *node) putSchedule(uniq, text string, due int64) {
	n.t.Helper()
	props := map[string]string{message.PropRealTopic: "orders", message.PropRealQueueID: "0",
		message.PropTimerOutMS: strconv.FormatInt(due, 10), message.PropUniqKey: uniq,
		schedule.Prop: text, schedule.PropSeq: "1"}
	now := n.clock.Load()
	rec, err := (&message.Record{Topic: Topic, BornHost: failoverHost, StoreHost: failoverHost, Body: []byte(uniq),
		BornTimestamp: now, StoreTimestamp: now, Properties: message.EncodeProperties(props)}).Encode(nil)
	if err != nil {
		n.t.Fatal(err)
	}
	ch := make(chan error, 1)
	n.w.Send(&writer.Append{Key: writer.QueueKey{Topic: Topic}, Records: [][]byte{rec}, Reply: func(r writer.Result) { ch <- r.Err }})
	select {
	case err := <-ch:
		if err != nil {
			n.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		n.t.Fatal("append not answered")
	}
}

// scheduleIdents are the identities of fire seq (due at dueMs) of schedule
// uniq and of the next-fire record it writes.
func scheduleIdents(uniq string, seq, dueMs, nextMs int64) (fire, next string) {
	return FireUniqKey(uniq, seq, dueMs) + "@" + strconv.FormatInt(dueMs, 10), uniq + "@" + strconv.FormatInt(nextMs, 10) + nextSuffix
}

// TestScheduleHandsOver: a master fires a recurring timer three times (a
// clock jump: the fires catch up one after the other); a store built from
// a byte copy of its CommitLog runs as a replica and writes nothing when
// the fourth falls due; promoted, it fires the fourth and fifth and
// nothing before: every fire and every next-fire record is in the log
// once, none written early.
func TestScheduleHandsOver(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := startNode(t, t.TempDir(), role.Master, clock)
	a.putSchedule("S1", "@every 1s", t0+1000)
	waitFor(t, "the master's wheel to hold the schedule", func() bool { return a.wheel.Stats().Added == 1 })
	clock.Store(t0 + 3500) // fires 1..3 due
	want := map[string]bool{}
	for seq := int64(1); seq <= 3; seq++ {
		f, n := scheduleIdents("S1", seq, t0+seq*1000, t0+(seq+1)*1000)
		want[f], want[n] = true, true
	}
	waitFor(t, "the master to fire three times", func() bool { return len(a.copies()) == len(want) })
	for id, c := range a.copies() {
		if !want[id] || c != 1 {
			t.Fatalf("master's log holds %s %d times (want %v)", id, c, want)
		}
	}
	a.close()

	dir := t.TempDir()
	copyLog(t, a.dir, dir)
	b := startNode(t, dir, role.Replica, clock)
	waitFor(t, "the replica's wheel to hold the schedule's records", func() bool { return b.wheel.Stats().Added == 4 })
	clock.Store(t0 + 4500) // fire 4 due while there is no master
	time.Sleep(100 * time.Millisecond)
	if w := b.delivered(); len(w) != 0 {
		t.Fatalf("the replica wrote back %+v", w)
	}
	b.role.Set(role.State{Kind: role.Master, ReplicaID: 1, Epoch: 2})
	f4, n4 := scheduleIdents("S1", 4, t0+4000, t0+5000)
	waitFor(t, "the promoted node to fire the fourth", func() bool { return len(b.delivered()) >= 2 })
	time.Sleep(100 * time.Millisecond) // nothing else is due
	if w := b.delivered(); len(w) != 2 || w[0].ident != f4 || w[1].ident != n4 {
		t.Fatalf("promoted node wrote back %+v, want %s and %s", w, f4, n4)
	}
	clock.Store(t0 + 5500)
	waitFor(t, "the fifth fire", func() bool { return len(b.delivered()) >= 4 })
	f5, n5 := scheduleIdents("S1", 5, t0+5000, t0+6000)
	want[f4], want[n4], want[f5], want[n5] = true, true, true, true
	got := b.copies()
	for id := range want {
		if got[id] != 1 {
			t.Fatalf("%s in the log %d times, want once (log %v)", id, got[id], got)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("log holds %v, want %v", got, want)
	}
	for _, d := range b.delivered() {
		if d.nowMs < d.due && d.ident[len(d.ident)-len(nextSuffix):] != nextSuffix {
			t.Fatalf("%s written early: at %d, due %d", d.ident, d.nowMs, d.due)
		}
	}
}
