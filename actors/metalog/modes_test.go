package metalog

import (
	"errors"
	"maps"
	"testing"

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
