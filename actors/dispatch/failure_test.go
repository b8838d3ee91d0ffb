package dispatch

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage/stagetest"
	"github.com/wheelmq/wheelmq/storage/consumequeue"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// A retirement comes after the supervisor's restarts and their
	// backoff: on a loaded machine (CI's two cores running the race
	// detector) that takes longer than one stage round trip.
	deadline := time.Now().Add(4 * wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// putAll puts n records on T/0 and returns their units.
func putAll(t *testing.T, r *rig, n int) []consumequeue.Unit {
	var out []consumequeue.Unit
	for i := 0; i < n; i++ {
		out = append(out, r.put(t, "T", 0, "tag"))
	}
	return out
}

// TestFullDiskPausesDispatch refuses every consume-queue write for want of
// space: dispatch neither advances nor restarts, and once the disk has room
// again it catches up with every unit in place.
func TestFullDiskPausesDispatch(t *testing.T) {
	fs := &vfstest.FaultFS{}
	r := newRigFS(t, 0, fs)
	fs.Scope(filepath.Join(r.st.Dir, "consumequeue")) // the CommitLog's fsyncs (the rig makes appends durable) are not the fault
	r.retry = 5 * time.Millisecond
	want := putAll(t, r, 5)
	fs.Full(true) // the records are in the CommitLog; the queue's first file cannot be created
	r.start(t, time.Hour)
	waitFor(t, "a refused write", fs.Hit)
	time.Sleep(50 * time.Millisecond) // ten retries
	if got := r.st.Dispatched.Load(); got != 0 {
		t.Fatalf("Dispatched %d while every queue write is refused", got)
	}
	if n := r.restarts.Load(); n != 0 {
		t.Fatalf("dispatch restarted %d times on a full disk, want a pause", n)
	}
	fs.Reset()
	r.caughtUp(t)
	if got := units(t, r.st, "T", 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("units after the disk has room %v, want %v", got, want)
	}
	if n := r.restarts.Load(); n != 0 {
		t.Fatalf("dispatch restarted %d times", n)
	}
}

// TestFailedQueueIsReopened makes a consume queue sticky-failed, by a failed
// fsync at a checkpoint and by a failed rollback: dispatch restarts,
// reopens the queue in its Started handler and every unit ends up in place.
func TestFailedQueueIsReopened(t *testing.T) {
	tests := []struct {
		name   string
		inject func(fs *vfstest.FaultFS)
	}{
		{"failed fsync at a checkpoint", func(fs *vfstest.FaultFS) { fs.FailSync(1) }},
		{"failed rollback", func(fs *vfstest.FaultFS) { fs.FailWrite(1); fs.FailTruncate(true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &vfstest.FaultFS{}
			r := newRigFS(t, 0, fs)
			fs.Scope(filepath.Join(r.st.Dir, "consumequeue")) // the CommitLog's fsyncs (the rig makes appends durable) are not the fault
			want := putAll(t, r, 3)
			r.start(t, 5*time.Millisecond)
			r.caughtUp(t)
			want = append(want, putAll(t, r, 2)...) // in the CommitLog before the fault is armed
			tt.inject(fs)
			r.kicker.Kick()
			waitFor(t, "the fault", fs.Hit)
			fs.Reset()
			waitFor(t, "a restart", func() bool { return r.restarts.Load() > 0 })
			want = append(want, putAll(t, r, 2)...)
			r.kicker.Kick()
			r.caughtUp(t)
			q := r.st.Queues.Lookup("T", 0)
			if err := q.Failed(); err != nil {
				t.Fatalf("queue still failed: %v", err)
			}
			if got := units(t, r.st, "T", 0); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("units %v, want %v", got, want)
			}
			if down := r.metrics.Down(); len(down) > 0 {
				t.Fatalf("stages down: %v", down)
			}
		})
	}
}

// TestQueueReopenFailureRetiresDispatch leaves a partial unit the reopen
// cannot cut: dispatch is stopped for good with a cause naming the reopen.
func TestQueueReopenFailureRetiresDispatch(t *testing.T) {
	fs := &vfstest.FaultFS{}
	r := newRigFS(t, 0, fs)
	fs.Scope(filepath.Join(r.st.Dir, "consumequeue")) // the CommitLog's fsyncs (the rig makes appends durable) are not the fault
	putAll(t, r, 2)
	r.start(t, time.Hour)
	r.caughtUp(t)
	// Armed before the record is put: dispatch may take it up at once (a
	// kick or its poll), and the write that fails must be its unit's.
	fs.FailWrite(1)
	fs.FailTruncate(true) // the rollback fails, and so will the reopen's cut
	putAll(t, r, 1)
	r.kicker.Kick()
	waitFor(t, "dispatch to be retired", func() bool { return len(r.metrics.Down()) == 1 })
	d := r.metrics.Down()[0]
	if d.Stage != StageName || !strings.Contains(d.Cause, "reopen the failed consume queue T/0") {
		t.Fatalf("down %+v, want dispatch with the reopen failure", d)
	}
}

// TestSlowCheckpointDoesNotHoldDispatch holds every fsync, as a disk busy
// writing back holds them: the checkpoint waits for its consume-queue
// fsyncs on the side while the dispatcher goes on filing units, and once
// the fsyncs return the checkpoint covers what was dispatched, never more.
func TestSlowCheckpointDoesNotHoldDispatch(t *testing.T) {
	fs := &vfstest.FaultFS{}
	r := newRigFS(t, 0, fs)
	fs.Scope(filepath.Join(r.st.Dir, "consumequeue")) // the CommitLog's fsyncs (the rig makes appends durable) are not the fault
	t.Cleanup(fs.Reset)                               // before the rig's cleanup stops the dispatcher
	want := putAll(t, r, 3)
	r.start(t, 5*time.Millisecond)
	r.caughtUp(t)
	fs.HoldSyncs()
	want = append(want, putAll(t, r, 2)...)
	r.kicker.Kick()
	waitFor(t, "a checkpoint's fsync", fs.Hit)
	held := checkpoint(t, r.st)
	for i := 0; i < 3; i++ { // dispatching goes on while the fsync is held
		want = append(want, putAll(t, r, 2)...)
		r.kicker.Kick()
		r.caughtUp(t)
	}
	if got := units(t, r.st, "T", 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("units while a checkpoint waits for its fsync %v, want %v", got, want)
	}
	if cp := checkpoint(t, r.st); cp != held {
		t.Fatalf("checkpoint moved from %d to %d while its fsync was held", held, cp)
	}
	fs.ReleaseSyncs()
	waitFor(t, "the checkpoint to catch up", func() bool {
		cp := checkpoint(t, r.st)
		if cp > r.st.Dispatched.Load() {
			t.Fatalf("checkpoint %d ahead of Dispatched %d", cp, r.st.Dispatched.Load())
		}
		return cp == r.st.CommitLog.MaxOffset()
	})
	if n := r.restarts.Load(); n != 0 {
		t.Fatalf("dispatch restarted %d times", n)
	}
}

const checkpointerRun = "actors/dispatch.(*checkpointer).run"

// TestCheckpointerPanicRestartsDispatch panics inside a checkpoint's
// consume-queue fsync on the checkpointer: the process (this test binary)
// survives, dispatch is restarted by its supervisor, the checkpoint the
// panic cut short is made by the new instance, every unit ends up in place,
// and exactly one checkpointer runs after the restart and none after
// dispatch stops.
func TestCheckpointerPanicRestartsDispatch(t *testing.T) {
	fs := &vfstest.FaultFS{}
	r := newRigFS(t, 0, fs)
	fs.Scope(filepath.Join(r.st.Dir, "consumequeue"))
	want := putAll(t, r, 3)
	r.start(t, 5*time.Millisecond)
	r.caughtUp(t)
	caughtUpCheckpoint := func() bool { return checkpoint(t, r.st) == r.st.CommitLog.MaxOffset() }
	waitFor(t, "the first checkpoint", caughtUpCheckpoint)
	waitFor(t, "one checkpointer", func() bool { return stagetest.GoroutinesIn(checkpointerRun) == 1 })
	fs.PanicSync(1)
	want = append(want, putAll(t, r, 2)...) // new units: the next checkpoint fsyncs them
	r.kicker.Kick()
	waitFor(t, "the panic in the checkpointer's fsync", fs.Hit)
	waitFor(t, "a restart", func() bool { return r.restarts.Load() > 0 })
	// The restart skipped its final checkpoint; the new instance makes it
	// without waiting for new records.
	waitFor(t, "the checkpoint the panic cut short", caughtUpCheckpoint)
	want = append(want, putAll(t, r, 2)...)
	r.kicker.Kick()
	r.caughtUp(t)
	if got := units(t, r.st, "T", 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("units after the restart %v, want %v", got, want)
	}
	waitFor(t, "the checkpoint to catch up", caughtUpCheckpoint)
	if n := r.restarts.Load(); n != 1 {
		t.Errorf("dispatch restarted %d times, want 1", n)
	}
	if down := r.metrics.Down(); len(down) > 0 {
		t.Fatalf("stages down: %v", down)
	}
	waitFor(t, "exactly one checkpointer after the restart", func() bool { return stagetest.GoroutinesIn(checkpointerRun) == 1 })
	r.stop()
	waitFor(t, "no checkpointer after dispatch stopped", func() bool { return stagetest.GoroutinesIn(checkpointerRun) == 0 })
}
