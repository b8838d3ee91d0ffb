package timer

import (
	"errors"
	"io"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
)

// receiveTo appends src's log from the node's end up to end (whole
// records, raw bytes as the replication stream appends them) and confirms
// it.
func (n *node) receiveTo(src *node, end int64) {
	n.t.Helper()
	cl := n.st.CommitLog
	for off := cl.MaxOffset(); off < end; {
		b, next, err := src.st.CommitLog.ReadRaw(off, 1) // one record at a time
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			n.t.Fatal(err)
		}
		if next > end {
			n.t.Fatalf("record at %d ends at %d, past %d", off, next, end)
		}
		if err := cl.AppendRaw(off, b); err != nil {
			n.t.Fatal(err)
		}
		off = next
	}
	n.conf.end.Store(cl.MaxOffset())
	n.kick.Kick()
}

// TestLateCancelOnReplicaNotFired is the chaos run's cancelled timer
// delivered after a failover: replica B, lagging (a restarted replica
// catching up), receives timers K1 and K2 after their due time, then, in a
// later piece of the stream, K2's cancel (stored by the master before the
// due time) and the master's copy of K1. B is promoted. K2 must never be
// delivered, K1 only once (the master's copy), L1 (stored after the due
// time, due later) once by B, none early. Without the master's clock as
// the replica's release limit, B released K2 before its cancel was in the
// wheel, waited for a copy the master never wrote, and fired K2 on
// promotion.
func TestLateCancelOnReplicaNotFired(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := startNodeWith(t, t.TempDir(), role.Master, clock, newFakeConfirmer())
	a.promote(1)
	b := startNodeWith(t, t.TempDir(), role.Replica, clock, newFakeConfirmer())
	b.conf.hold()

	due := t0 + 100
	a.putTimer("K1", due, false)
	a.putTimer("K2", due, false)
	first := a.st.CommitLog.MaxOffset() // B gets this much first
	a.putTimer("K2", due, true)         // the cancel, stored before the due time
	waitFor(t, "A's wheel to hold the timers", func() bool { return a.wheel.Stats().Added == 3 })
	clock.Store(t0 + 200)
	waitFor(t, "A to fire K1", func() bool { return a.copyCount("K1", due) == 1 })
	waitFor(t, "A to drop K2", func() bool { return a.wheel.Stats().Cancelled == 1 })
	lateDue := t0 + 400
	a.putTimer("L1", lateDue, false) // stored at t0+200: the master's clock moved past K1, K2

	// B restarts late: the timers arrive after their due time, the cancel
	// in a later piece of the stream.
	b.receiveTo(a, first)
	waitFor(t, "B's wheel to hold K1 and K2", func() bool { return b.wheel.Stats().Added == 2 })
	time.Sleep(100 * time.Millisecond) // room for B to release them
	b.receive(a)
	waitFor(t, "B's wheel to hold the cancel and L1", func() bool { return b.wheel.Stats().Added == 4 })
	time.Sleep(100 * time.Millisecond) // B's shadow side matches A's copy of K1
	a.close()                          // A dies

	before := len(b.delivered())
	b.promote(2)
	time.Sleep(200 * time.Millisecond)
	if w := b.delivered()[before:]; len(w) != 0 {
		t.Fatalf("promoted B wrote back %+v; K1 has A's copy, K2 is cancelled, L1 is not due", w)
	}
	clock.Store(t0 + 500)
	waitFor(t, "B to fire L1", func() bool { return b.copyCount("L1", lateDue) == 1 })
	time.Sleep(100 * time.Millisecond)

	for _, c := range []struct {
		uniq string
		due  int64
		want int
	}{{"K1", due, 1}, {"K2", due, 0}, {"L1", lateDue, 1}} {
		if got := b.copyCount(c.uniq, c.due); got != c.want {
			t.Errorf("%s: %d copies in B's log, want %d (copies %v)", c.uniq, got, c.want, b.copies())
		}
	}
	for _, d := range b.delivered() {
		if !d.master {
			t.Errorf("written back while not master: %+v", d)
		}
		if d.nowMs < d.due {
			t.Errorf("%s fired early: at %d, due %d", d.ident, d.nowMs, d.due)
		}
		if d.ident == "K2@"+strconv.FormatInt(due, 10) {
			t.Errorf("cancelled K2 delivered: %+v", d)
		}
	}
}
