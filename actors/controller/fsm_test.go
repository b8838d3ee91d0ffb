package controller

import (
	"slices"
	"testing"
)

// reg is a register command for group c/b.
func reg(id int64, addr string) Command {
	return Command{Op: OpRegister, Cluster: "c", BrokerName: "b", ReplicaID: id, Addr: addr, HAAddr: addr + "-ha"}
}

// threeGroup returns a state with replicas 1 (master), 2, 3, all in the SSS
// at master epoch 1, SSS epoch 2.
func threeGroup(t *testing.T) *State {
	t.Helper()
	s := NewState()
	for _, a := range []string{"a1", "a2", "a3"} {
		if r := s.Apply(reg(0, a)); r.Code != 0 {
			t.Fatalf("register %s: %+v", a, r)
		}
	}
	r := s.Apply(Command{Op: OpAlter, Cluster: "c", BrokerName: "b", MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 1, Set: []int64{3, 1, 2}})
	if r.Code != 0 {
		t.Fatalf("alter: %+v", r)
	}
	return s
}

func TestRegister(t *testing.T) {
	s := NewState()
	r := s.Apply(reg(0, "a1"))
	if r.ReplicaID != 1 || r.Group.MasterID != 1 || r.Group.MasterEpoch != 1 || !slices.Equal(r.Group.SyncStateSet, []int64{1}) || r.Group.SyncStateSetEpoch != 1 {
		t.Fatalf("first replica must be master with SSS {1}: %+v", r)
	}
	cases := []struct {
		name   string
		cmd    Command
		wantID int64
	}{
		{"new replica gets next id", reg(0, "a2"), 2},
		{"same address without id is idempotent", reg(0, "a2"), 2},
		{"persisted id kept", reg(2, "a2"), 2},
		{"persisted id unknown to the controller is taken", reg(7, "a7"), 7},
		{"next id after a persisted one", reg(0, "a8"), 8},
	}
	for _, c := range cases {
		r := s.Apply(c.cmd)
		if r.Code != 0 || r.ReplicaID != c.wantID {
			t.Fatalf("%s: got %+v, want id %d", c.name, r, c.wantID)
		}
		if r.Group.MasterID != 1 || r.Group.MasterEpoch != 1 {
			t.Fatalf("%s: later replicas must not change the master: %+v", c.name, r.Group)
		}
	}
	if r := s.Apply(Command{Op: OpRegister, BrokerName: "b"}); r.Code != CodeInvalidRequest {
		t.Fatalf("register without address: %+v", r)
	}
}

func TestAlterFencing(t *testing.T) {
	cases := []struct {
		name     string
		cmd      Command
		wantCode int32
		wantSet  []int64
		wantSSSE int64
	}{
		{"ok shrink", Command{MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: []int64{1, 2}}, 0, []int64{1, 2}, 3},
		{"same set: no epoch change", Command{MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: []int64{1, 2, 3}}, 0, []int64{1, 2, 3}, 2},
		{"stale master epoch", Command{MasterID: 1, MasterEpoch: 0, SyncStateSetEpoch: 2, Set: []int64{1}}, CodeFencedMasterEpoch, []int64{1, 2, 3}, 2},
		{"stale sss epoch", Command{MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 1, Set: []int64{1}}, CodeFencedSyncStateSetEpoch, []int64{1, 2, 3}, 2},
		{"not the master", Command{MasterID: 2, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: []int64{2}}, CodeInvalidMaster, []int64{1, 2, 3}, 2},
		{"set without master", Command{MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: []int64{2, 3}}, CodeInvalidReplicas, []int64{1, 2, 3}, 2},
		{"unknown replica", Command{MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: []int64{1, 9}}, CodeInvalidReplicas, []int64{1, 2, 3}, 2},
		{"unknown group", Command{BrokerName: "x", MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: []int64{1}}, CodeBrokerMetadataNotExist, []int64{1, 2, 3}, 2},
	}
	for _, c := range cases {
		s := threeGroup(t)
		c.cmd.Op, c.cmd.Cluster = OpAlter, "c"
		if c.cmd.BrokerName == "" {
			c.cmd.BrokerName = "b"
		}
		r := s.Apply(c.cmd)
		if r.Code != c.wantCode {
			t.Fatalf("%s: code %d (%s), want %d", c.name, r.Code, r.Remark, c.wantCode)
		}
		g, _ := s.Group("c", "b")
		if !slices.Equal(g.SyncStateSet, c.wantSet) || g.SyncStateSetEpoch != c.wantSSSE || g.MasterEpoch != 1 {
			t.Fatalf("%s: group %+v, want set %v epoch %d", c.name, g, c.wantSet, c.wantSSSE)
		}
	}
}

func TestElect(t *testing.T) {
	cand := func(id, epoch, off int64) Candidate { return Candidate{ID: id, Epoch: epoch, MaxOffset: off} }
	cases := []struct {
		name       string
		sss        []int64 // SSS before (nil: {1,2,3})
		alive      []Candidate
		designated int64
		wantCode   int32
		wantMaster int64
		wantEpoch  int64
		wantSet    []int64
		wantSSSE   int64
	}{
		{"master alive is kept", nil, []Candidate{cand(1, 1, 10), cand(2, 1, 99)}, 0, 0, 1, 1, []int64{1, 2, 3}, 2},
		{"highest offset wins", nil, []Candidate{cand(2, 1, 50), cand(3, 1, 60)}, 0, 0, 3, 2, []int64{2, 3}, 3},
		{"epoch beats offset", nil, []Candidate{cand(2, 1, 50), cand(3, 0, 60)}, 0, 0, 2, 2, []int64{2, 3}, 3},
		{"tie: lowest id", nil, []Candidate{cand(3, 1, 5), cand(2, 1, 5)}, 0, 0, 2, 2, []int64{2, 3}, 3},
		{"never unclean", []int64{1, 2}, []Candidate{cand(3, 1, 1000)}, 0, CodeMasterNotAvailable, 0, 2, []int64{1, 2}, 3},
		{"outside SSS ignored", []int64{1, 2}, []Candidate{cand(3, 1, 1000), cand(2, 1, 1)}, 0, 0, 2, 2, []int64{2}, 4},
		{"designated", nil, []Candidate{cand(1, 1, 10), cand(2, 1, 1), cand(3, 1, 5)}, 2, 0, 2, 2, []int64{1, 2, 3}, 3},
		{"designated outside SSS refused", []int64{1, 2}, []Candidate{cand(1, 1, 1), cand(3, 1, 5)}, 3, CodeElectMasterFailed, 1, 1, []int64{1, 2}, 3},
		{"designated dead refused", nil, []Candidate{cand(1, 1, 1)}, 2, CodeElectMasterFailed, 1, 1, []int64{1, 2, 3}, 2},
	}
	for _, c := range cases {
		s := threeGroup(t)
		if c.sss != nil {
			if r := s.Apply(Command{Op: OpAlter, Cluster: "c", BrokerName: "b", MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: c.sss}); r.Code != 0 {
				t.Fatalf("%s: alter: %+v", c.name, r)
			}
		}
		r := s.Apply(Command{Op: OpElect, Cluster: "c", BrokerName: "b", Alive: c.alive, Designated: c.designated})
		if r.Code != c.wantCode {
			t.Fatalf("%s: code %d (%s), want %d", c.name, r.Code, r.Remark, c.wantCode)
		}
		g := r.Group
		if g.MasterID != c.wantMaster || g.MasterEpoch != c.wantEpoch || !slices.Equal(g.SyncStateSet, c.wantSet) || g.SyncStateSetEpoch != c.wantSSSE {
			t.Fatalf("%s: got master %d epoch %d set %v sssEpoch %d; want %d %d %v %d", c.name,
				g.MasterID, g.MasterEpoch, g.SyncStateSet, g.SyncStateSetEpoch, c.wantMaster, c.wantEpoch, c.wantSet, c.wantSSSE)
		}
	}
}

func TestElectAfterNoMasterAndStaleAlter(t *testing.T) {
	s := threeGroup(t)
	// Everybody dies: no master, epoch 2, set kept.
	if r := s.Apply(Command{Op: OpElect, Cluster: "c", BrokerName: "b"}); r.Code != CodeMasterNotAvailable || r.Group.MasterEpoch != 2 {
		t.Fatalf("no candidate: %+v", r)
	}
	// Old master's alter at epoch 1 is fenced.
	if r := s.Apply(Command{Op: OpAlter, Cluster: "c", BrokerName: "b", MasterID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2, Set: []int64{1}}); r.Code != CodeInvalidMaster {
		t.Fatalf("alter without master: %+v", r)
	}
	// Replica 3 comes back: elected, epoch 3.
	r := s.Apply(Command{Op: OpElect, Cluster: "c", BrokerName: "b", Alive: []Candidate{{ID: 3}}})
	if r.Code != 0 || r.Group.MasterID != 3 || r.Group.MasterEpoch != 3 || !slices.Equal(r.Group.SyncStateSet, []int64{3}) {
		t.Fatalf("returning member: %+v", r)
	}
	// The old master's alter at epoch 1 is refused.
	if r := s.Apply(Command{Op: OpAlter, Cluster: "c", BrokerName: "b", MasterID: 3, MasterEpoch: 1, SyncStateSetEpoch: 3, Set: []int64{3}}); r.Code != CodeFencedMasterEpoch {
		t.Fatalf("stale alter: %+v", r)
	}
}

func TestSnapshotRestore(t *testing.T) {
	f := NewFSM()
	f.Apply(reg(0, "a1"))
	f.Apply(reg(0, "a2"))
	f.Apply(Command{Op: OpPeer, PeerID: "n1", PeerAddr: "127.0.0.1:9876"})
	b, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	g := NewFSM()
	if err := g.Restore(b); err != nil {
		t.Fatal(err)
	}
	g.View(func(s *State) {
		grp, ok := s.Group("c", "b")
		if !ok || len(grp.Replicas) != 2 || grp.Replicas[2].Addr != "a2" || grp.NextID != 3 || s.Peers["n1"] != "127.0.0.1:9876" {
			t.Fatalf("restored %+v %+v", grp, s.Peers)
		}
	})
	if err := g.Restore([]byte("{")); err == nil {
		t.Fatal("bad snapshot restored")
	}
}
