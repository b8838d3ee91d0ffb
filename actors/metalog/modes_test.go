package metalog

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// setMode sets a request mode through the rig's POP stage.
func setMode(t *testing.T, r *rig, group, topic, mode string) {
	t.Helper()
	ask(t, r.pp, func(done func(error)) any {
		return &pop.SetMode{Mode: meta.RequestMode{ConsumerGroup: group, Topic: topic, Mode: mode, PopShareQueueNum: 1}, Done: done}
	})
}

// TestRequestModesReplicate: modes set on the master reach a replica's
// POP engine and file through the log; a replica refuses to set one; a
// node started on a copy of the master's CommitLog alone has them; a
// restarted node has them from its file.
func TestRequestModesReplicate(t *testing.T) {
	m := newRig(t, t.TempDir(), role.Master)
	r := newRig(t, t.TempDir(), role.Replica)
	setMode(t, m, "g1", "orders", meta.RequestModePop)
	setMode(t, m, "g2", "orders", meta.RequestModePull)
	setMode(t, m, "g1", "orders", meta.RequestModePull) // the last one stands
	setMode(t, m, "g1", "orders", meta.RequestModePop)
	if got := m.pe.Modes().Mode("g1", "orders"); got != meta.RequestModePop {
		t.Fatalf("master's mode %q, want POP", got)
	}
	settle(t, m, 1)
	eventually(t, "the replica to apply the modes", func() bool {
		follow(t, m, r)
		return r.pe.Modes().Mode("g1", "orders") == meta.RequestModePop && r.pe.Modes().Mode("g2", "orders") == meta.RequestModePull
	})
	// The replica's progress says so (what a promotion's reload waits for).
	eventually(t, "the replica's progress past its log's end", func() bool {
		ok, err := r.prog.AppliedBelow(r.st.CommitLog.MaxOffset())
		return err == nil && ok
	})
	if got := r.pe.Modes().Modes(); !maps.Equal(got, m.pe.Modes().Modes()) {
		t.Fatalf("replica modes %v, master's %v", got, m.pe.Modes().Modes())
	}
	eventually(t, "the replica's file to hold the modes", func() bool {
		modes, err := meta.LoadRequestModes(r.st.FS, r.st.RequestModesPath())
		return err == nil && len(modes) == 2
	})
	// A replica takes no SET_MESSAGE_REQUEST_MODE.
	ch := make(chan error, 1)
	r.pp.Send(&pop.SetMode{Mode: meta.RequestMode{ConsumerGroup: "g3", Topic: "orders", Mode: meta.RequestModePop},
		Done: func(err error) { ch <- err }})
	if err := <-ch; !errors.Is(err, pop.ErrNotMaster) {
		t.Fatalf("a replica's SetMode: %v, want ErrNotMaster", err)
	}

	// A copy of the master's CommitLog alone rebuilds the modes.
	m.close()
	dir := t.TempDir()
	copyCommitLog(t, m.dir, dir)
	c := newRig(t, dir, role.Standalone)
	eventually(t, "the copy to rebuild the modes", func() bool {
		return c.pe.Modes().Mode("g1", "orders") == meta.RequestModePop && c.pe.Modes().Mode("g2", "orders") == meta.RequestModePull
	})

	// A restart reads them from the node's own file.
	r.close()
	r2 := newRig(t, r.dir, role.Replica)
	if got := r2.pe.Modes().Mode("g1", "orders"); got != meta.RequestModePop {
		t.Fatalf("restarted replica's mode %q, want POP from its file", got)
	}
}

// TestPromotionWaitsForModes: a replica holds the master's 401 record in
// its CommitLog, indexed, but its metadata log has not applied it (it is
// only kicked by the test). A promotion's Reload must not serve pulls or
// pops of any group until the record is applied: the table answers busy
// meanwhile, and once it stops, the group's mode is POP.
func TestPromotionWaitsForModes(t *testing.T) {
	m := newRig(t, t.TempDir(), role.Master)
	r := newRigWith(t, t.TempDir(), role.Replica, 4<<20, time.Hour, false)
	setMode(t, m, "g1", "orders", meta.RequestModePop)
	settle(t, m, 1)
	eventually(t, "the replica to index the master's log", func() bool {
		follow(t, m, r)
		end := m.st.CommitLog.MaxOffset()
		return r.st.CommitLog.MaxOffset() == end && r.st.Dispatched.Load() == end
	})
	tb := r.pe.Modes()
	if got := tb.Mode("g1", "orders"); got != "" {
		t.Fatalf("the replica's mode %q before its metadata log was kicked", got)
	}
	r.pp.Send(&pop.Reload{Epoch: 2})
	askInFlight(t, r) // the Reload is served
	if tb.ReloadedFor() != 2 || !tb.ModesPending() {
		t.Fatalf("after the reload: reloaded for %d, modes pending %v", tb.ReloadedFor(), tb.ModesPending())
	}
	now := time.Now()
	if ref := tb.PullAllowed("g1", "orders", 0, now); ref == nil || !ref.Busy {
		t.Fatalf("a pull of the group set to POP before the record is applied: %v, want busy", ref)
	}
	if ref := tb.PopAllowed("g2", "orders", now); ref == nil || !ref.Busy {
		t.Fatalf("a pop before the record is applied: %v, want busy", ref)
	}
	r.ml.Send(Kick{})
	eventually(t, "the reload to finish", func() bool { return !tb.ModesPending() })
	if got := tb.Mode("g1", "orders"); got != meta.RequestModePop {
		t.Fatalf("modes no longer pending but the group's mode is %q, want POP", got)
	}
	if ref := tb.PullAllowed("g1", "orders", 0, time.Now()); ref == nil || ref.Busy {
		t.Fatalf("a pull of the group set to POP after the reload: %v, want refused", ref)
	}
}

// askInFlight asks the rig's POP stage for a group's deliveries: once it
// answers, everything sent to the stage before was served.
func askInFlight(t *testing.T, r *rig) {
	t.Helper()
	ch := make(chan struct{}, 1)
	r.pp.Send(&pop.InFlight{Group: "g", Reply: func(map[pop.QueueKey]pop.QueueInFlight) { ch <- struct{}{} }})
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatal("the POP stage does not answer")
	}
}
