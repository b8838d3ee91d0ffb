package timer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/dispatch"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/commitlog"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// fakeConfirmer stands in for the replication service: the confirmed
// offset (the store's DurableEnd) follows the log's end while auto, else
// stays where the test puts it; the writer's waits are answered at once
// while auto, else held until failAll (as the service fails them when the
// broker stops being an unfenced master).
type fakeConfirmer struct {
	cl   *commitlog.CommitLog
	auto atomic.Bool
	end  atomic.Int64

	mu      sync.Mutex
	waiters []func(bool)
}

func newFakeConfirmer() *fakeConfirmer {
	c := &fakeConfirmer{}
	c.auto.Store(true)
	return c
}

func (c *fakeConfirmer) DurableEnd() int64 {
	if c.auto.Load() {
		return c.cl.MaxOffset()
	}
	return min(c.end.Load(), c.cl.MaxOffset())
}

func (c *fakeConfirmer) WaitConfirmed(end int64, done func(bool)) {
	if c.auto.Load() {
		done(true)
		return
	}
	c.mu.Lock()
	c.waiters = append(c.waiters, done)
	c.mu.Unlock()
}

// hold stops confirming: the confirmed offset stays at the log's end now.
func (c *fakeConfirmer) hold() {
	c.end.Store(c.cl.MaxOffset())
	c.auto.Store(false)
}

// confirmAll confirms everything from now on.
func (c *fakeConfirmer) confirmAll() { c.auto.Store(true) }

// failAll answers every held wait with false.
func (c *fakeConfirmer) failAll() {
	c.mu.Lock()
	w := c.waiters
	c.waiters = nil
	c.mu.Unlock()
	for _, done := range w {
		done(false)
	}
}

// putPadding appends a plain message of size bytes without waiting for
// its answer (it may never be confirmed).
func (n *node) putPadding(size int) {
	n.t.Helper()
	now := n.clock.Load()
	rec, err := (&message.Record{Topic: "padding", BornHost: failoverHost, StoreHost: failoverHost,
		Body: make([]byte, size), BornTimestamp: now, StoreTimestamp: now}).Encode(nil)
	if err != nil {
		n.t.Fatal(err)
	}
	n.w.Send(&writer.Append{Key: writer.QueueKey{Topic: "padding"}, Records: [][]byte{rec}, Reply: func(writer.Result) {}})
}

// copyCount counts the written-back copies of uniq in the node's log.
func (n *node) copyCount(uniq string, due int64) int {
	return n.copies()[uniq+"@"+strconv.FormatInt(due, 10)]
}

// truncateTo cuts the node's log at off as its replication receiver does
// (commitlog.Truncate, then the derived state: dispatch.Cut, then the
// timer service, as pipeline's cutDerived).
func (n *node) truncateTo(off int64) {
	n.t.Helper()
	if err := n.st.CommitLog.Truncate(off); err != nil {
		n.t.Fatal(err)
	}
	done := make(chan error, 1)
	n.d.Send(&dispatch.Cut{Above: off, Reply: func(err error) {
		if err != nil {
			done <- err
			return
		}
		n.svc.Truncated(off, func(err error) { done <- err })
	}})
	select {
	case err := <-done:
		if err != nil {
			n.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		n.t.Fatal("truncation not reconciled")
	}
}

// receive appends src's log from the node's end to src's end (the
// replication stream) and confirms it.
func (n *node) receive(src *node) {
	n.t.Helper()
	cl := n.st.CommitLog
	for off := cl.MaxOffset(); off < src.st.CommitLog.MaxOffset(); {
		b, next, err := src.st.CommitLog.ReadRaw(off, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			n.t.Fatal(err)
		}
		if err := cl.AppendRaw(off, b); err != nil {
			n.t.Fatal(err)
		}
		off = next
	}
	n.conf.end.Store(cl.MaxOffset())
	n.kick.Kick()
}

// promote makes the node master at epoch (the writer rebuilds its queue
// offsets from the log, as pipeline's promotion does).
func (n *node) promote(epoch int64) {
	n.t.Helper()
	n.conf.confirmAll()
	n.role.Set(role.State{Kind: role.Master, ReplicaID: 1, Epoch: epoch})
	done := make(chan error, 1)
	n.w.Send(&writer.Promote{Epoch: epoch, Done: func(err error) { done <- err }})
	if err := <-done; err != nil {
		n.t.Fatal(err)
	}
}

// logCopy starts a replica node on a copy of src's log cut at off.
func logCopy(t *testing.T, src *node, off int64, clock *atomic.Int64) *node {
	t.Helper()
	dir := t.TempDir()
	copyLog(t, src.dir, dir)
	st, err := storage.Open(dir, storage.Options{SegmentSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CommitLog.Truncate(off); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(st.TimerDir()); err != nil {
		t.Fatal(err)
	}
	n := startNodeWith(t, dir, role.Replica, clock, newFakeConfirmer())
	n.conf.hold()
	return n
}

// TestTimersFireOnceAcrossTruncation builds the chaos test's double fire
// step by step: master A takes writes that are never confirmed,
// acknowledges a batch with nothing to write back (a cancel: its replay
// scan start moves to the log's end) and fires U2..U4 (their write-backs
// wait for their confirmation when A is demoted); replica B, holding A's log up to the confirmed end, is
// promoted and fires them; A rejoins as B's replica, truncates its
// unconfirmed tail and receives B's log, whose copies land below where
// A's copy scan had got to (the start of its first pending write-back);
// B fires U5; B dies and A is promoted again. A must fire only U6 (due
// later), every timer is in the final log once, none was fired early.
func TestTimersFireOnceAcrossTruncation(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := startNodeWith(t, t.TempDir(), role.Master, clock, newFakeConfirmer())
	a.promote(1)
	due := map[string]int64{}
	for i := 1; i <= 6; i++ {
		u := fmt.Sprintf("U%d", i)
		due[u] = t0 + int64(i)*100
		a.putTimer(u, due[u], false)
	}
	a.putTimer("C1", t0+1180, false) // cancelled: its cancel is released at t0+179, alone
	a.putTimer("C1", t0+1180, true)
	waitFor(t, "A's wheel to hold the timers", func() bool { return a.wheel.Stats().Added == 8 })
	clock.Store(t0 + 150) // U1, confirmed
	waitFor(t, "A to fire U1", func() bool { return a.copyCount("U1", due["U1"]) == 1 })
	waitFor(t, "U1 acknowledged", func() bool { return a.wheel.Stats().Delivered == 1 })
	cut := a.st.CommitLog.MaxOffset() // B holds this much: the consistent point

	a.conf.hold()         // the replicas are cut off
	a.putPadding(4 << 10) // taken, never confirmed
	waitFor(t, "the padding", func() bool { return a.st.CommitLog.MaxOffset() > cut+4<<10 })
	clock.Store(t0 + 180) // the cancel: a batch with nothing to write, acknowledged at the log's end
	waitFor(t, "the cancel acknowledged", func() bool { return !a.wheel.Checkpoint().Acked.Less(timerwheel.Cursor{Ms: t0 + 179}) })
	time.Sleep(50 * time.Millisecond) // timer_flush persists the replay scan start there
	clock.Store(t0 + 350)             // U2, U3
	waitFor(t, "A to fire U2 and U3", func() bool {
		return a.copyCount("U2", due["U2"]) == 1 && a.copyCount("U3", due["U3"]) == 1
	})
	clock.Store(t0 + 450) // U4: its write-back, too, waits for a confirmation that never comes
	waitFor(t, "A to fire U4", func() bool { return a.copyCount("U4", due["U4"]) == 1 })
	a.role.Set(role.State{Kind: role.Replica, ReplicaID: 1, Epoch: 2}) // demoted (B elected)
	a.conf.failAll()

	b := logCopy(t, a, cut, clock)
	waitFor(t, "B's wheel to hold the timers", func() bool { return b.wheel.Stats().Added == 8 })
	b.promote(2)
	waitFor(t, "B to fire U2..U4", func() bool {
		return b.copyCount("U2", due["U2"]) == 1 && b.copyCount("U3", due["U3"]) == 1 && b.copyCount("U4", due["U4"]) == 1
	})

	a.truncateTo(cut)
	a.receive(b)
	clock.Store(t0 + 550) // U5: B fires it, A shadows
	waitFor(t, "B to fire U5", func() bool { return b.copyCount("U5", due["U5"]) == 1 })
	a.receive(b)
	// A's shadow side matches B's copies: its acknowledged position then
	// reaches the clock.
	waitFor(t, "A's shadow side to match B's copies", func() bool {
		return !a.wheel.Checkpoint().Acked.Less(timerwheel.Cursor{Ms: t0 + 550})
	})
	b.close() // B dies

	before := len(a.delivered())
	a.promote(3)
	time.Sleep(200 * time.Millisecond)
	if w := a.delivered()[before:]; len(w) != 0 {
		t.Fatalf("promoted A wrote back %+v; every due timer has a confirmed copy of B's", w)
	}
	clock.Store(t0 + 700)
	waitFor(t, "A to fire U6", func() bool { return a.copyCount("U6", due["U6"]) == 1 })
	time.Sleep(100 * time.Millisecond)
	for u, at := range due {
		if c := a.copyCount(u, at); c != 1 {
			t.Errorf("%s: %d copies in the final log, want 1 (copies %v)", u, c, a.copies())
		}
	}
	for _, n := range []*node{a, b} {
		for _, d := range n.delivered() {
			if d.nowMs < d.due {
				t.Errorf("%s fired early: at %d, due %d", d.ident, d.nowMs, d.due)
			}
		}
	}
}

// TestTimerFiredOnCutTailFiresAgain: A fires U1 as master, its write-back
// is never confirmed but A acknowledges it from its own copy; A is
// demoted, the new master dies before writing anything, A truncates its
// tail to the consistent point (U1's copy is gone) and is promoted again:
// it fires U1, once. Without the acknowledgement rewind U1 was lost.
func TestTimerFiredOnCutTailFiresAgain(t *testing.T) {
	const t0 = int64(1_800_000_000_000)
	clock := &atomic.Int64{}
	clock.Store(t0)
	a := startNodeWith(t, t.TempDir(), role.Master, clock, newFakeConfirmer())
	a.promote(1)
	due := t0 + 100
	a.putTimer("U1", due, false)
	waitFor(t, "A's wheel to hold U1", func() bool { return a.wheel.Stats().Added == 1 })
	cut := a.st.CommitLog.MaxOffset()
	a.conf.hold()
	clock.Store(t0 + 150)
	waitFor(t, "A to fire U1", func() bool { return a.copyCount("U1", due) == 1 })
	a.conf.failAll()
	waitFor(t, "U1 acknowledged by A's own copy", func() bool { return a.wheel.Stats().Delivered >= 1 })
	a.role.Set(role.State{Kind: role.Replica, ReplicaID: 1, Epoch: 2})
	a.conf.failAll()
	a.truncateTo(cut)
	if c := a.copyCount("U1", due); c != 0 {
		t.Fatalf("U1's copy survived the truncation (%d)", c)
	}
	a.promote(3)
	waitFor(t, "A to fire U1 again", func() bool { return a.copyCount("U1", due) == 1 })
	time.Sleep(100 * time.Millisecond)
	if c := a.copyCount("U1", due); c != 1 {
		t.Fatalf("U1: %d copies, want 1", c)
	}
}
