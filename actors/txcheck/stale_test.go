package txcheck

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestStaleEndOfLostHalf: a crash that kept the CommitLog's pages out of
// order can keep an op record whose half message it lost at the half
// queue's tail; the next half message then gets that queue offset again.
// The restart scan must not take the stale op record for its end (it did:
// the new transaction counted as rolled back, its commit was refused and
// never delivered; found by TestPowerLoss).
func TestStaleEndOfLostHalf(t *testing.T) {
	// before: the next half message comes before the stage restarts (the
	// scan finds it in the half queue, stored after the op record), or
	// after (the op record names an offset past the half queue's end).
	for _, before := range []bool{true, false} {
		t.Run(map[bool]string{true: "half stored before the restart", false: "half stored after the restart"}[before], func(t *testing.T) {
			r := newRig(t, "", nil)
			r.stopTx()
			a := r.sendHalf("PG", "T", 0, nil)
			h, err := (&Stage{opts: r.opts}).readHalfAt(a.commitLog)
			if err != nil {
				t.Fatal(err)
			}
			// The op record of a half at a.halfOffset+1, which the crash took.
			op, err := opRecord(h, a.halfOffset+1, Rollback, time.Now().UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			r.appendRaw(writer.QueueKey{Topic: meta.TopicTransOpHalf}, op)
			var b sent
			if before {
				b = r.sendHalf("PG", "T", 0, nil)
				r.waitDispatched()
				r.startTx()
			} else {
				r.waitDispatched()
				r.startTx()
				r.open() // the stage has started: its scan is done
				b = r.sendHalf("PG", "T", 0, nil)
			}
			if b.halfOffset != a.halfOffset+1 {
				t.Fatalf("b's half queue offset %d, want %d (the lost half's)", b.halfOffset, a.halfOffset+1)
			}
			if code, remark := r.end(b, true); code != remoting.Success {
				t.Fatalf("commit of b: %d %s", code, remark)
			}
			r.waitFor("b delivered", func() bool { return len(r.records("T", 0)) == 1 })
			if got := r.records("T", 0); string(got[0].Body) != b.body {
				t.Errorf("T/0 holds %v, want b", bodies(got))
			}
		})
	}
}
