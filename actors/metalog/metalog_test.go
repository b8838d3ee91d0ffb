package metalog

import (
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/storage/metarec"
)

// change makes topics, groups and offsets changes on a master rig,
// including deletes, and returns nothing: compare the rigs afterwards.
func change(t *testing.T, r *rig, round int) {
	t.Helper()
	tc := func(name string, q int32) meta.TopicConfig {
		return meta.TopicConfig{TopicName: name, ReadQueueNums: q, WriteQueueNums: q, Perm: 6}
	}
	ask(t, r.tp, func(done func(error)) any { return &topics.Put{Config: tc("orders", int32(4+round)), Done: done} })
	ask(t, r.tp, func(done func(error)) any { return &topics.Put{Config: tc("doomed", 2), Done: done} })
	ask(t, r.tp, func(done func(error)) any { return &topics.Delete{Topic: "doomed", Done: done} })
	ask(t, r.gp, func(done func(error)) any {
		c := meta.NewSubscriptionGroupConfig("billing")
		c.RetryMaxTimes = int32(3 + round)
		return &groups.Put{Config: c, Done: done}
	})
	ask(t, r.gp, func(done func(error)) any {
		return &groups.Put{Config: meta.NewSubscriptionGroupConfig("gone"), Done: done}
	})
	ask(t, r.gp, func(done func(error)) any {
		return &groups.Delete{Name: "gone", Done: func(_ bool, err error) { done(err) }}
	})
	for q := range int32(4) {
		for i := range 50 { // a burst of commits: the journal carries the last
			r.off.Send(&offsets.Commit{Group: "billing", Topic: "orders", QueueID: q, Offset: int64(100*round + i + int(q))})
		}
	}
	r.off.Send(&offsets.Commit{Group: "gone", Topic: "orders", QueueID: 0, Offset: 7}) // dropped with its group below
	ask(t, r.gp, func(done func(error)) any {
		return &groups.Put{Config: meta.NewSubscriptionGroupConfig("gone"), Done: done}
	})
	// As the router deletes a group: its offsets first, so that no journal
	// record of them follows the group's delete record.
	ask(t, r.off, func(done func(error)) any { return &offsets.DropGroup{Group: "gone", Done: func() { done(nil) }} })
	ask(t, r.gp, func(done func(error)) any {
		return &groups.Delete{Name: "gone", Done: func(_ bool, err error) { done(err) }}
	})
	// A group deleted without cleanOffset keeps its offsets, on the
	// replica as on the master (sameState compares them).
	ask(t, r.gp, func(done func(error)) any {
		return &groups.Put{Config: meta.NewSubscriptionGroupConfig("kept"), Done: done}
	})
	r.off.Send(&offsets.Commit{Group: "kept", Topic: "orders", QueueID: 1, Offset: int64(40 + round)})
	settle(t, r, 1) // the offset journaled before the delete record
	ask(t, r.gp, func(done func(error)) any {
		return &groups.Delete{Name: "kept", Done: func(_ bool, err error) { done(err) }}
	})
}

// metaRecords returns how many system records the rig's log holds.
func metaRecords(r *rig) int64 {
	if q := r.st.Queues.Lookup(metarec.Topic, 0); q != nil {
		return q.MaxOffset()
	}
	return 0
}

// settle waits until a master rig's journal caught up: its system queue
// stops growing and holds at least min records.
func settle(t *testing.T, r *rig, min int64) {
	t.Helper()
	last, stable := int64(-1), 0
	eventually(t, "the metadata journal to settle", func() bool {
		n := metaRecords(r)
		if n == last && n >= min {
			stable++
		} else {
			stable = 0
		}
		last = n
		return stable >= 10
	})
}

func TestCopiedCommitLogRebuildsState(t *testing.T) {
	a := newRig(t, t.TempDir(), role.Standalone)
	change(t, a, 1)
	settle(t, a, 5)
	wantTopics, wantGroups, wantOffsets := a.tv.Load().Topics, a.gv.Load().Groups, a.offsetsOf()
	// billing's 4 queues and the deleted group "kept"'s queue (a delete alone keeps offsets)
	if len(wantOffsets) != 5 || len(wantTopics) != 1 || len(wantGroups) != 1 {
		t.Fatalf("master state: %d topics %d groups %d offsets", len(wantTopics), len(wantGroups), len(wantOffsets))
	}
	a.close()

	dir := t.TempDir()
	copyCommitLog(t, a.dir, dir) // no config files, no consume queues
	b := newRig(t, dir, role.Standalone)
	eventually(t, "the copy to rebuild topics, groups and offsets", func() bool {
		return equalJSON(b.tv.Load().Topics, wantTopics) && equalJSON(b.gv.Load().Groups, wantGroups) &&
			equalJSON(b.offsetsOf(), wantOffsets)
	})
	if _, ok := b.tv.Get(metarec.Topic); ok {
		t.Fatal("the system topic became a normal topic")
	}
	// The state is in b's own files once the cursor is saved: a restart
	// keeps it without re-reading the records.
	eventually(t, "the cursor to be saved", func() bool {
		cp, err := b.st.LoadCheckpoint()
		v, _ := cp.Get(CursorKey)
		return err == nil && v == metaRecords(b)
	})
	b.close()
	c := newRig(t, dir, role.Standalone)
	if !equalJSON(loadTopics(t, c), wantTopics) {
		t.Fatal("topics not in the copy's own file")
	}
	eventually(t, "offsets from the copy's own file", func() bool { return equalJSON(c.offsetsOf(), wantOffsets) })
}

func loadTopics(t *testing.T, r *rig) map[string]meta.TopicConfig {
	t.Helper()
	m, _, err := topics.Load(r.st.FS, r.st.TopicsPath(), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// follow copies the master's new CommitLog bytes to the replica, record by
// record, as the replication receiver would, and kicks its dispatch.
func follow(t *testing.T, master, replica *rig) {
	t.Helper()
	src, dst := master.st.CommitLog, replica.st.CommitLog
	for off := dst.MaxOffset(); ; {
		rec, next, err := src.Read(off)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read master log at %d: %v", off, err)
		}
		if _, err := dst.Append([][]byte{append([]byte(nil), rec...)}); err != nil {
			t.Fatalf("append to replica log at %d: %v", off, err)
		}
		off = next
	}
	if err := dst.Sync(); err != nil {
		t.Fatal(err)
	}
	replica.dkick.Kick()
}

func TestReplicaAppliesRecordsAsTheyArrive(t *testing.T) {
	m := newRig(t, t.TempDir(), role.Master)
	r := newRig(t, t.TempDir(), role.Replica)
	var replicaAppends atomic.Int64
	r.appends = &replicaAppends
	for round := range 3 {
		change(t, m, round)
		settle(t, m, 1)
		// Copy what the master journaled until the replica holds its state:
		// on a loaded machine the journal may still grow after it looked
		// settled (settle is a heuristic), as a real stream keeps feeding.
		eventually(t, "the replica to apply the round", func() bool {
			follow(t, m, r)
			return sameState(m, r)
		})
	}
	if n := replicaAppends.Load(); n != 0 {
		t.Fatalf("the replica journaled %d times", n)
	}
	eventually(t, "the replica's log to be the master's", func() bool {
		follow(t, m, r)
		return r.st.CommitLog.MaxOffset() == m.st.CommitLog.MaxOffset()
	})
	// Promoted, the replica journals: a full snapshot first.
	r.role.Set(role.State{Kind: role.Master, ReplicaID: 1, Epoch: 2})
	eventually(t, "the promoted replica's full snapshot", func() bool { return replicaAppends.Load() > 0 })
}
