package timer

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/writer"
)

// putStop stores the stop record of schedule uniq (of topic "orders")
// through the writer, as a schedule's cancel does.
func (n *node) putStop(uniq string) {
	n.t.Helper()
	rec, err := StopRecord("orders", uniq, "@every 1s", n.clock.Load(), failoverHost, failoverHost)
	if err != nil {
		n.t.Fatal(err)
	}
	ch := make(chan error, 1)
	n.w.Send(&writer.Append{Key: writer.QueueKey{Topic: StopTopic}, Records: [][]byte{rec}, Reply: func(r writer.Result) { ch <- r.Err }})
	select {
	case err := <-ch:
		if err != nil {
			n.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		n.t.Fatal("append not answered")
	}
}

// fires counts, per sequence number, the fires of schedule uniq in the
// node's log (due every second from t0+1000) up to seq max.
func (n *node) fires(uniq string, t0, max int64) map[int64]int {
	got := n.copies()
	out := map[int64]int{}
	for seq := int64(1); seq <= max; seq++ {
		f, _ := scheduleIdents(uniq, seq, t0+seq*1000, t0+(seq+1)*1000)
		if c := got[f]; c > 0 {
			out[seq] = c
		}
	}
	return out
}

// firesTwice starts a master, sends schedules S1 and S2 (@every 1s from
// t0+1000), lets both fire twice and stops S1 (a stop record only, no
// TIMER_DEL: the stop alone must end it).
func firesTwice(t *testing.T, clock *atomic.Int64, t0 int64) *node {
	a := startNode(t, t.TempDir(), role.Master, clock)
	a.putSchedule("S1", "@every 1s", t0+1000)
	a.putSchedule("S2", "@every 1s", t0+1000)
	waitFor(t, "the wheel to hold both schedules", func() bool { return a.wheel.Stats().Added == 2 })
	clock.Store(t0 + 2500)
	waitFor(t, "two fires of each", func() bool { return len(a.fires("S1", t0, 2)) == 2 && len(a.fires("S2", t0, 2)) == 2 })
	a.putStop("S1")
	waitFor(t, "the stop to be read", func() bool { return a.svc.stops.stopped(stopKey("orders", "S1")) })
	return a
}

// TestStoppedScheduleSurvivesRestart: a schedule stopped by its stop
// record alone fires no more, after a restart on the same data (the stop
// set is read again from the CommitLog before the first release) and on a
// store built from a byte copy of the log (no wheel, no consume queue: the
// enqueue side starts from nothing and re-reads every next-fire record,
// the pending one and the older ones). S2, fired alongside, shows that the
// due fires were released and written.
func TestStoppedScheduleSurvivesRestart(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := firesTwice(t, clock, t0)
	a.close()

	b := startNode(t, a.dir, role.Master, clock) // restart on the same data
	clock.Store(t0 + 4500)
	waitFor(t, "S2's fourth fire after the restart", func() bool { return b.fires("S2", t0, 4)[4] == 1 })
	if got := b.fires("S1", t0, 6); len(got) != 2 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("S1's fires after the restart: %v, want only fires 1 and 2, once each", got)
	}
	// The stopped third fire counts as cancelled (wheelmq_timer_cancelled_total).
	waitFor(t, "the stopped fire counted", func() bool { return b.svc.opts.Metrics.Counts().Cancelled >= 1 })
	b.close()

	dir := t.TempDir()
	copyLog(t, a.dir, dir)
	c := startNode(t, dir, role.Master, clock) // the enqueue side from nothing
	clock.Store(t0 + 5500)
	waitFor(t, "S2's fifth fire on the copy", func() bool { return c.fires("S2", t0, 5)[5] == 1 })
	if got := c.fires("S1", t0, 6); len(got) != 2 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("S1's fires on the copy: %v, want only fires 1 and 2, once each", got)
	}
	for _, d := range c.delivered() {
		if len(d.ident) > 2 && d.ident[:2] == "S1" {
			t.Fatalf("the copy wrote S1's next-fire record %s", d.ident)
		}
	}
}

// TestStoppedScheduleHandsOver: a replica built from the master's log
// (schedule S1 stopped, S2 not) neither writes nor waits for S1's third
// fire; promoted, it writes S2's third fire and its next-fire record and
// nothing of S1.
func TestStoppedScheduleHandsOver(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := firesTwice(t, clock, t0)
	a.close()
	dir := t.TempDir()
	copyLog(t, a.dir, dir)
	b := startNode(t, dir, role.Replica, clock)
	waitFor(t, "the replica to read the stop", func() bool { return b.svc.stops.stopped(stopKey("orders", "S1")) })
	clock.Store(t0 + 3500) // the third fires due while there is no master
	waitFor(t, "the replica to release the third fires", func() bool { return b.wheel.Stats().Issued >= 6 })
	if w := b.delivered(); len(w) != 0 {
		t.Fatalf("the replica wrote back %+v", w)
	}
	b.role.Set(role.State{Kind: role.Master, ReplicaID: 1, Epoch: 2})
	f3, n3 := scheduleIdents("S2", 3, t0+3000, t0+4000)
	waitFor(t, "the promoted node to fire S2's third", func() bool { return b.copies()[f3] == 1 && b.copies()[n3] == 1 })
	if got := b.fires("S1", t0, 6); len(got) != 2 {
		t.Fatalf("S1's fires on the promoted node: %v, want only fires 1 and 2", got)
	}
	for _, d := range b.delivered() {
		if d.ident != f3 && d.ident != n3 {
			t.Fatalf("the promoted node wrote %s; want only %s and %s", d.ident, f3, n3)
		}
	}
}

// TestStopReleasesShadowWait: a replica released S1's third fire and waits
// for the master's copy; the master stopped S1 and writes none. Once the
// stop record reaches the replica's confirmed log the wait ends and the
// batch is acknowledged while the node is still a replica.
func TestStopReleasesShadowWait(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := startNodeWith(t, t.TempDir(), role.Master, clock, newFakeConfirmer())
	a.promote(1)
	b := startNodeWith(t, t.TempDir(), role.Replica, clock, newFakeConfirmer())
	b.conf.hold()
	a.putSchedule("S1", "@every 1s", t0+1000)
	b.receive(a)
	waitFor(t, "both wheels to hold the schedule", func() bool { return a.wheel.Stats().Added == 1 && b.wheel.Stats().Added == 1 })
	a.putStop("S1")
	waitFor(t, "the master to read the stop", func() bool { return a.svc.stops.stopped(stopKey("orders", "S1")) })
	clock.Store(t0 + 1500)
	waitFor(t, "the master to release the first fire", func() bool { return a.wheel.Stats().Delivered == 1 })
	waitFor(t, "the replica to release the first fire", func() bool { return b.wheel.Stats().Issued == 1 })
	time.Sleep(50 * time.Millisecond) // room for a wrong acknowledgement
	if d := b.wheel.Stats().Delivered; d != 0 {
		t.Fatalf("the replica acknowledged the fire before it had the master's copy or stop (%d)", d)
	}
	b.receive(a) // the stop record
	waitFor(t, "the replica to acknowledge the stopped fire", func() bool { return b.wheel.Stats().Delivered == 1 })
	if w := a.delivered(); len(w) != 0 {
		t.Fatalf("the master wrote back %+v for a stopped schedule", w)
	}
	if w := b.delivered(); len(w) != 0 {
		t.Fatalf("the replica wrote back %+v", w)
	}
}

// TestStopSetFollowsCut: when the stop topic's consume queue is cut below
// what the stop set has read (the reconcile of a truncated log tail), the
// set is read again from the queue: a stop whose record was cut no longer
// applies, the others still do.
func TestStopSetFollowsCut(t *testing.T) {
	clock := &atomic.Int64{}
	clock.Store(1_800_000_000_000)
	a := startNode(t, t.TempDir(), role.Master, clock)
	a.putStop("S1")
	a.putStop("S2")
	waitFor(t, "both stops to be read", func() bool {
		return a.svc.stops.stopped(stopKey("orders", "S1")) && a.svc.stops.stopped(stopKey("orders", "S2"))
	})
	if err := a.st.Queues.Lookup(StopTopic, 0).TruncateAt(1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the set to forget the cut stop", func() bool { return !a.svc.stops.stopped(stopKey("orders", "S2")) })
	if !a.svc.stops.stopped(stopKey("orders", "S1")) || a.svc.stops.readTo() != 1 {
		t.Fatalf("after the cut: S1 stopped %v, read to %d; want true, 1", a.svc.stops.stopped(stopKey("orders", "S1")), a.svc.stops.readTo())
	}
}
