package router

import (
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestModeTable: pops in flight refuse pulls until acked or past their
// deadline; a served pull refuses pops for its suspend time plus
// pullGrace; a mode set by 401 decides over both.
func TestModeTable(t *testing.T) {
	var tb modeTable
	now := time.UnixMilli(1_000_000)
	if ref := tb.pullAllowed("g", "t", 0, now); ref != nil {
		t.Fatalf("a fresh group's pull refused: %v", ref)
	}
	if ref := tb.popAllowed("g", "t", now); ref == nil || ref.Code != remoting.NoPermission ||
		!strings.Contains(ref.Remark, "by PULL") {
		t.Fatalf("a pop right after a pull: %v, want NO_PERMISSION 'by PULL'", ref)
	}
	if ref := tb.popAllowed("g", "other", now); ref != nil {
		t.Fatalf("a pop of another topic refused: %v", ref)
	}
	later := now.Add(pullGrace + time.Millisecond)
	if ref := tb.popAllowed("g", "t", later); ref != nil {
		t.Fatalf("a pop after the pull's hold refused: %v", ref)
	}
	deadline := later.Add(15 * time.Second).UnixMilli()
	tb.popped("g", "t", "0 0 5,6;0 2 9", deadline)
	if ref := tb.pullAllowed("g", "t", 0, later); ref == nil || !strings.Contains(ref.Remark, "in flight until") {
		t.Fatalf("a pull with 3 deliveries in flight: %v, want refused 'in flight until'", ref)
	}
	tb.acked("g", "t", 0, 5, 6)
	if ref := tb.pullAllowed("g", "t", 0, later); ref == nil {
		t.Fatal("a pull with queue 2 offset 9 still in flight was allowed")
	}
	tb.changed("g", "t", 2, 9, later.Add(time.Hour).UnixMilli())
	if ref := tb.pullAllowed("g", "t", 0, later.Add(20*time.Second)); ref == nil {
		t.Fatal("a pull past the first deadline allowed though the change moved it an hour on")
	}
	tb.acked("g", "t", 2, 9)
	if ref := tb.pullAllowed("g", "t", 0, later); ref != nil {
		t.Fatalf("a pull with everything acked refused: %v", ref)
	}
	// Expiry frees the group too.
	tb.popped("g", "x", "0 1 3", later.Add(time.Second).UnixMilli())
	if ref := tb.pullAllowed("g", "x", 0, later.Add(2*time.Second)); ref != nil {
		t.Fatalf("a pull after the only delivery's deadline refused: %v", ref)
	}
	// 401 decides.
	tb.setMode("g2", "t", ModePop)
	if ref := tb.pullAllowed("g2", "t", 0, now); ref == nil || !strings.Contains(ref.Remark, "SET_MESSAGE_REQUEST_MODE") {
		t.Fatalf("a pull of a group set to POP: %v", ref)
	}
	if ref := tb.popAllowed("g2", "t", now); ref != nil {
		t.Fatalf("a pop of a group set to POP refused: %v", ref)
	}
	tb.setMode("g2", "t", ModePull)
	if ref := tb.popAllowed("g2", "t", now); ref == nil {
		t.Fatal("a pop of a group set to PULL allowed")
	}
	tb.popped("g2", "t", "0 0 1", now.Add(time.Hour).UnixMilli())
	if ref := tb.pullAllowed("g2", "t", 0, now); ref != nil {
		t.Fatalf("a pull of a group set to PULL refused: %v", ref)
	}
}

// TestModeTableOverflow: past maxTrackedInflight deliveries the latest
// deadline still holds the group.
func TestModeTableOverflow(t *testing.T) {
	var tb modeTable
	now := time.UnixMilli(1_000_000)
	s := tb.state(modeKey{"g", "t"})
	for i := range maxTrackedInflight {
		s.inflight[queueOffset{0, int64(i)}] = now.Add(time.Second).UnixMilli()
	}
	tb.popped("g", "t", "0 1 7", now.Add(time.Minute).UnixMilli())
	if len(s.inflight) != maxTrackedInflight {
		t.Fatalf("%d tracked, want the cap %d", len(s.inflight), maxTrackedInflight)
	}
	if ref := tb.pullAllowed("g", "t", 0, now.Add(2*time.Second)); ref == nil {
		t.Fatal("the overflowed delivery's deadline did not hold the group")
	}
}
