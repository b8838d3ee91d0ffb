package writer

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage/stagetest"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

const flusherRun = "actors/writer.(*flusher).run"

// TestFlusherPanicRestartsTheWriter panics inside the flusher's periodic
// fsync: the process (this test binary) survives, the writer is restarted
// by its supervisor (wheelmq_actor_restarts_total), exactly one flusher
// runs after the restart and none after the writer stops, sends go on, and
// the new flusher makes everything durable.
func TestFlusherPanicRestartsTheWriter(t *testing.T) {
	fs := &vfstest.FaultFS{}
	r := newRigFS(t, fs)
	fs.Scope(filepath.Join(r.dir, "commitlog"))
	r.start(t, Options{Mode: FlushAsync, FlushInterval: 5 * time.Millisecond})
	k := QueueKey{"A", 0}
	durable := func() bool { return r.st.CommitLog.FlushedOffset() == r.st.CommitLog.MaxOffset() }
	var all []acked
	for i := 0; i < 3; i++ {
		all = append(all, r.sendAcked(t, k, fmt.Sprintf("before-%d", i)))
	}
	waitFor(t, "the periodic fsync", durable)
	waitFor(t, "one flusher", func() bool { return stagetest.GoroutinesIn(flusherRun) == 1 })
	fs.PanicSync(1)
	all = append(all, r.sendAcked(t, k, "dirty")) // something for the next tick to fsync
	waitFor(t, "the panic in the flusher's fsync", fs.Hit)
	waitFor(t, "the writer's restart", func() bool { return r.restarts(t) >= 1 })
	for i := 0; i < 3; i++ {
		all = append(all, r.sendAcked(t, k, fmt.Sprintf("after-%d", i)))
	}
	waitFor(t, "the new flusher's fsync", durable)
	checkAcked(t, r, all)
	if n := r.restarts(t); n != 1 {
		t.Errorf("%v writer restarts, want 1", n)
	}
	if down := r.metrics.Down(); len(down) > 0 {
		t.Fatalf("stages down: %v", down)
	}
	waitFor(t, "exactly one flusher after the restart", func() bool { return stagetest.GoroutinesIn(flusherRun) == 1 })
	r.stop()
	waitFor(t, "no flusher after the writer stopped", func() bool { return stagetest.GoroutinesIn(flusherRun) == 0 })
}
