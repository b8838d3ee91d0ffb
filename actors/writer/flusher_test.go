package writer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// goroutinesIn counts the goroutines whose stack holds fn (a function's
// full name, as runtime stacks print it).
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(fn)) {
			count++
		}
	}
	return count
}

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
	waitFor(t, "one flusher", func() bool { return goroutinesIn(flusherRun) == 1 })
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
	waitFor(t, "exactly one flusher after the restart", func() bool { return goroutinesIn(flusherRun) == 1 })
	r.stop()
	waitFor(t, "no flusher after the writer stopped", func() bool { return goroutinesIn(flusherRun) == 0 })
}
