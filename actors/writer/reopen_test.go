package writer

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// acked is an acknowledged append: its body and where it was stored.
type acked struct {
	body   string
	offset int64
	size   int
}

// sendAcked appends one record and requires success.
func (r *rig) sendAcked(t *testing.T, k QueueKey, body string) acked {
	t.Helper()
	rec := record(t, k.Topic, k.QueueID, body)
	res := r.send(t, k, [][]byte{rec})
	if res.Err != nil {
		t.Fatalf("append %s: %v", body, res.Err)
	}
	return acked{body: body, offset: res.Offsets[0], size: len(rec)}
}

// checkAcked reads every acknowledged record back from the CommitLog.
func checkAcked(t *testing.T, r *rig, all []acked) {
	t.Helper()
	for _, a := range all {
		d, _, err := message.Decode(mustRead(t, r.st, a.offset, a.size))
		if err != nil {
			t.Fatal(err)
		}
		if string(d.Body) != a.body {
			t.Fatalf("record at %d holds %q, want %q", a.offset, d.Body, a.body)
		}
	}
}

// TestWriterReopensFailedCommitLog fails an fsync: the CommitLog turns
// sticky-failed, the writer restarts and reopens it in its Started
// handler, sends succeed again, and nothing acknowledged is lost.
func TestWriterReopensFailedCommitLog(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := &vfstest.FaultFS{}
			r := newRigFS(t, fs)
			r.start(t, Options{Mode: mode, FlushInterval: 10 * time.Millisecond})
			k := QueueKey{"A", 0}
			var all []acked
			for i := 0; i < 5; i++ {
				all = append(all, r.sendAcked(t, k, fmt.Sprintf("before-%d", i)))
			}
			if mode == FlushAsync {
				waitFor(t, "the periodic fsync", func() bool { return r.st.CommitLog.FlushedOffset() == r.st.CommitLog.MaxOffset() })
			}
			fs.FailSync(1)
			if mode == FlushSync {
				// The append whose fsync fails is refused with the error.
				res := r.send(t, k, [][]byte{record(t, "A", 0, "refused")})
				if !errors.Is(res.Err, syscall.EIO) {
					t.Fatalf("append whose fsync failed: %+v, want EIO", res)
				}
			} else {
				all = append(all, r.sendAcked(t, k, "before-tick")) // answered before the failing tick
			}
			waitFor(t, "the failed fsync", fs.Hit)
			// The fault is marked inside Sync, before the log turns failed:
			// wait for the writer's restart, which reopens the log.
			waitFor(t, "the writer's restart", func() bool { return r.restarts(t) >= 1 })
			waitFor(t, "the reopen", func() bool { return r.st.CommitLog.Failed() == nil })
			for i := 0; i < 5; i++ {
				all = append(all, r.sendAcked(t, k, fmt.Sprintf("after-%d", i)))
			}
			checkAcked(t, r, all)
			if down := r.metrics.Down(); len(down) > 0 {
				t.Fatalf("stages down after a successful reopen: %v", down)
			}
			// Queue offsets stay consecutive across the restart (the refused
			// append's bytes, if recovery kept them, hold their offset).
			offs := storedQueueOffsets(t, r.st)[k]
			for i, o := range offs {
				if o != int64(i) {
					t.Fatalf("queue offsets %v are not consecutive", offs)
				}
			}
		})
	}
}

// TestWriterStopsWhenReopenFails keeps every fsync failing, so the reopen
// fails too: the writer is stopped for good with a fatal error naming the
// reopen, and later sends are refused at once with the stage's cause.
func TestWriterStopsWhenReopenFails(t *testing.T) {
	fs := &vfstest.FaultFS{}
	r := newRigFS(t, fs)
	r.start(t, Options{Mode: FlushSync})
	k := QueueKey{"A", 0}
	before := r.sendAcked(t, k, "before")
	fs.FailEverySync(true)
	if res := r.send(t, k, [][]byte{record(t, "A", 0, "refused")}); !errors.Is(res.Err, syscall.EIO) {
		t.Fatalf("append whose fsync failed: %+v, want EIO", res)
	}
	waitFor(t, "the writer to be retired", func() bool { return len(r.metrics.Down()) == 1 })
	d := r.metrics.Down()[0]
	if d.Stage != StageName || !strings.Contains(d.Cause, "reopen the failed commitlog") || !strings.Contains(d.Cause, "fatal") {
		t.Fatalf("down %+v, want the commitlog stage with the reopen failure", d)
	}
	res := r.send(t, k, [][]byte{record(t, "A", 0, "after")})
	if !errors.Is(res.Err, stage.ErrDown) {
		t.Fatalf("append to a retired writer: %v, want a stage-down error", res.Err)
	}
	if r.st.CommitLog.Failed() == nil {
		t.Fatal("commitlog no longer failed")
	}
	checkAcked(t, r, []acked{before}) // reads still work
}
