package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// fixedDurable is a confirmed offset that never moves.
type fixedDurable int64

func (f fixedDurable) DurableEnd() int64 { return int64(f) }

// TestCutReachesTheTimers: the replication receiver's Cut (after it
// truncated the log) drops the derived state of dispatch and of the timer
// dequeue side: the persisted replay scan start is lowered to the cut, so
// a restart rescans the new master's bytes for the copies of timers.
func TestCutReachesTheTimers(t *testing.T) {
	var env ReplicationEnv
	cfg := DefaultConfig()
	cfg.DataDir, cfg.BrokerName, cfg.Cluster = t.TempDir(), "b1", "c1"
	cfg.Replication, cfg.HAListen = ReplicationController, "127.0.0.1:0"
	cfg.Role = role.NewHolder(role.State{Kind: role.Replica, BrokerID: -1})
	cfg.StartReplication = func(e ReplicationEnv) (*Replication, error) {
		env = e
		return &Replication{Durable: fixedDurable(0)}, nil
	}
	p, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	st := p.Store()
	// A replay scan start above the cut, as a master leaves it.
	if err := meta.UpdateCheckpoint(st.FS, st.CheckpointPath(), timer.ReplayCheckpointKey, 1<<20); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	env.Cut(4096, func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Cut not answered")
	}
	cp, err := st.LoadCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if got := cp.Values[timer.ReplayCheckpointKey]; got > 4096 {
		t.Fatalf("timer_replay_from %d after a cut at 4096", got)
	}
}
