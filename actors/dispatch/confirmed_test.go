package dispatch

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/commitlog"
)

// fakeDurable is a confirmed offset the test advances.
type fakeDurable struct{ v atomic.Int64 }

func (f *fakeDurable) DurableEnd() int64 { return f.v.Load() }

func (r *rig) startConfirmed(t *testing.T) {
	t.Helper()
	r.kicker = &Kicker{}
	s, err := r.metrics.Spawn(r.sys, r.strat, StageName, Producer(Options{
		Store: r.st, CheckpointInterval: 20 * time.Millisecond, Notify: r.notify,
		UpToDurableEnd: true, ConfirmPoll: time.Hour, // only kicks move it: the test proves they do
	}, r.kicker))
	if err != nil {
		t.Fatal(err)
	}
	r.kicker.Bind(s)
	r.kicker.Kick()
	r.d = s
}

// settle waits for Dispatched to stop moving at want.
func (r *rig) dispatchedAt(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for r.st.Dispatched.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("Dispatched %d, want %d", r.st.Dispatched.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond)
	if got := r.st.Dispatched.Load(); got != want {
		t.Fatalf("Dispatched moved to %d past %d", got, want)
	}
}

// TestDispatchUpToConfirmed: no unit above the confirmed offset, ever; a
// kick after it rises dispatches up to it; a confirmed offset inside a
// record keeps that record out.
func TestDispatchUpToConfirmed(t *testing.T) {
	r := newRig(t)
	fd := &fakeDurable{}
	r.st.SetDurableEnd(fd)
	var us []int64
	for range 10 {
		u := r.put(t, "C", 0, "")
		us = append(us, u.Offset+int64(u.Size)+commitlog.EntryOverhead)
	}
	r.startConfirmed(t)
	r.dispatchedAt(t, 0)
	if n := len(units(t, r.st, "C", 0)); n != 0 {
		t.Fatalf("%d units dispatched with nothing confirmed", n)
	}
	fd.v.Store(us[2])
	r.kicker.Kick()
	r.dispatchedAt(t, us[2])
	if n := len(units(t, r.st, "C", 0)); n != 3 {
		t.Fatalf("%d units, want 3 (confirmed up to the third record)", n)
	}
	fd.v.Store(us[5] - 1) // inside the sixth record
	r.kicker.Kick()
	r.dispatchedAt(t, us[4])
	if n := len(units(t, r.st, "C", 0)); n != 5 {
		t.Fatalf("%d units, want 5", n)
	}
	fd.v.Store(us[9])
	r.kicker.Kick()
	r.dispatchedAt(t, us[9])
	if n := len(units(t, r.st, "C", 0)); n != 10 {
		t.Fatalf("%d units, want 10", n)
	}
}

// TestDispatchPollsConfirmed: with no kick, the poll finds the rise.
func TestDispatchPollsConfirmed(t *testing.T) {
	r := newRig(t)
	fd := &fakeDurable{}
	r.st.SetDurableEnd(fd)
	u := r.put(t, "P", 0, "")
	r.kicker = &Kicker{}
	s, err := r.metrics.Spawn(r.sys, r.strat, StageName, Producer(Options{
		Store: r.st, UpToDurableEnd: true, ConfirmPoll: 5 * time.Millisecond}, r.kicker))
	if err != nil {
		t.Fatal(err)
	}
	r.kicker.Bind(s)
	r.kicker.Kick()
	r.d = s
	time.Sleep(20 * time.Millisecond)
	fd.v.Store(u.Offset + int64(u.Size) + commitlog.EntryOverhead)
	r.caughtUp(t)
}

// TestCutDropsDerived: a Cut after the log's truncation drops the units at
// or above it and dispatching resumes there.
func TestCutDropsDerived(t *testing.T) {
	r := newRig(t)
	for range 6 {
		r.put(t, "X", 1, "")
	}
	r.start(t, 10*time.Millisecond)
	r.caughtUp(t)
	cutAt := units(t, r.st, "X", 1)[3].Offset
	done := make(chan error, 1)
	left, ckpt := -1, int64(-1)
	r.d.Send(&Cut{Above: cutAt, Reply: func(err error) {
		left = len(units(t, r.st, "X", 1)) // on the dispatcher, before it re-dispatches
		ckpt = checkpoint(t, r.st)
		done <- err
	}})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("cut not answered")
	}
	if left != 3 {
		t.Fatalf("%d units after the cut, want 3", left)
	}
	// The log was not truncated here: re-dispatch brings the same units
	// back, none twice.
	r.caughtUp(t)
	if n := len(units(t, r.st, "X", 1)); n != 6 {
		t.Fatalf("%d units after re-dispatch, want 6", n)
	}
	if ckpt > cutAt {
		t.Fatalf("checkpoint %d left above the cut %d", ckpt, cutAt)
	}
}
