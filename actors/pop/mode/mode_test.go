package mode

import (
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// TestTable: pops in flight refuse pulls until done or past their
// deadline; a served pull refuses pops for its suspend time plus
// PullGrace; a mode set by 401 decides over both; a recovering engine
// makes pulls of groups without a mode wait.
func TestTable(t *testing.T) {
	tb := New()
	now := time.UnixMilli(1_000_000)
	if ref := tb.PullAllowed("g", "t", 0, now); ref != nil {
		t.Fatalf("a fresh group's pull refused: %v", ref)
	}
	if ref := tb.PopAllowed("g", "t", now); ref == nil || ref.Busy || !strings.Contains(ref.Remark, "by PULL") {
		t.Fatalf("a pop right after a pull: %v, want refused 'by PULL'", ref)
	}
	if ref := tb.PopAllowed("g", "other", now); ref != nil {
		t.Fatalf("a pop of another topic refused: %v", ref)
	}
	later := now.Add(PullGrace + time.Millisecond)
	if ref := tb.PopAllowed("g", "t", later); ref != nil {
		t.Fatalf("a pop after the pull's hold refused: %v", ref)
	}
	deadline := later.Add(15 * time.Second).UnixMilli()
	for range 3 {
		tb.Popped("g", "t", deadline)
	}
	if ref := tb.PullAllowed("g", "t", 0, later); ref == nil || !strings.Contains(ref.Remark, "in flight until") {
		t.Fatalf("a pull with 3 deliveries in flight: %v, want refused 'in flight until'", ref)
	}
	tb.Done("g", "t")
	tb.Done("g", "t")
	if ref := tb.PullAllowed("g", "t", 0, later); ref == nil {
		t.Fatal("a pull with one delivery still in flight was allowed")
	}
	tb.Moved("g", "t", later.Add(time.Hour).UnixMilli())
	if ref := tb.PullAllowed("g", "t", 0, later.Add(20*time.Second)); ref == nil {
		t.Fatal("a pull past the first deadline allowed though the change moved it an hour on")
	}
	tb.Done("g", "t")
	if ref := tb.PullAllowed("g", "t", 0, later); ref != nil {
		t.Fatalf("a pull with everything done refused: %v", ref)
	}
	if n := tb.InFlight("g", "t"); n != 0 {
		t.Fatalf("%d in flight after every delivery was done", n)
	}
	tb.Done("g", "t") // more dones than pops: ignored
	if n := tb.InFlight("g", "t"); n != 0 {
		t.Fatalf("%d in flight after an extra done", n)
	}
	// A deadline past frees the group too.
	tb.Popped("g", "x", later.Add(time.Second).UnixMilli())
	if ref := tb.PullAllowed("g", "x", 0, later.Add(2*time.Second)); ref != nil {
		t.Fatalf("a pull after the only delivery's deadline refused: %v", ref)
	}
	// 401 decides.
	tb.SetModes([]meta.RequestMode{{ConsumerGroup: "g2", Topic: "t", Mode: meta.RequestModePop}})
	if tb.Mode("g2", "t") != meta.RequestModePop || tb.Mode("g2", "x") != "" {
		t.Fatalf("modes: %q %q", tb.Mode("g2", "t"), tb.Mode("g2", "x"))
	}
	if ref := tb.PullAllowed("g2", "t", 0, now); ref == nil || !strings.Contains(ref.Remark, "SET_MESSAGE_REQUEST_MODE") {
		t.Fatalf("a pull of a group set to POP: %v", ref)
	}
	if ref := tb.PopAllowed("g2", "t", now); ref != nil {
		t.Fatalf("a pop of a group set to POP refused: %v", ref)
	}
	tb.SetModes([]meta.RequestMode{{ConsumerGroup: "g2", Topic: "t", Mode: meta.RequestModePull}})
	if ref := tb.PopAllowed("g2", "t", now); ref == nil {
		t.Fatal("a pop of a group set to PULL allowed")
	}
	tb.Popped("g2", "t", now.Add(time.Hour).UnixMilli())
	if ref := tb.PullAllowed("g2", "t", 0, now); ref != nil {
		t.Fatalf("a pull of a group set to PULL refused: %v", ref)
	}
	// Recovering: pulls of groups without a mode wait (busy); a group set
	// to PULL is served.
	tb.SetRecovering(true)
	if ref := tb.PullAllowed("g3", "t", 0, now); ref == nil || !ref.Busy {
		t.Fatalf("a pull while the engine recovers: %v, want busy", ref)
	}
	if ref := tb.PullAllowed("g2", "t", 0, now); ref != nil {
		t.Fatalf("a pull of a group set to PULL while recovering: %v", ref)
	}
	tb.SetRecovering(false)
	tb.ResetHolds()
	if ref := tb.PullAllowed("g", "t", 0, later.Add(PullGrace*3)); ref != nil {
		t.Fatalf("a pull after the holds were reset: %v", ref)
	}
}

// BenchmarkPullAllowed: the pull path's check, from many goroutines (no
// lock to contend on).
func BenchmarkPullAllowed(b *testing.B) {
	tb := New()
	tb.Popped("gp", "t", time.Now().Add(time.Hour).UnixMilli())
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if tb.PullAllowed("g", "t", time.Second, now) != nil {
				b.Fatal("refused")
			}
		}
	})
}
