package controller

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// history is what the crash test's client saw: the commands the leader
// acknowledged and the epochs and masters ever observed, to check the
// restarted group against.
type history struct {
	ackCount int
	maxIndex uint64                       // highest raft index acknowledged
	peers    map[string]string            // acknowledged OpPeer: id → address
	replicas map[string]map[string]bool   // acknowledged registers: group → addresses
	epochs   map[string][2]int64          // group → least (master epoch, sync-state set epoch) an acknowledged result showed
	masterOf map[string]map[int64]int64   // group → master epoch → master id, from every result and observed state
	seen     map[*FSM]map[string][2]int64 // per node incarnation: group → last observed epochs
}

func newHistory() *history {
	return &history{peers: map[string]string{}, replicas: map[string]map[string]bool{},
		epochs: map[string][2]int64{}, masterOf: map[string]map[int64]int64{}, seen: map[*FSM]map[string][2]int64{}}
}

var crashGroups = []string{"b0", "b1", "b2"}

// next makes command i from the leader's current view: peer records,
// registers, sync-state alters (sometimes with a stale epoch, which the
// FSM refuses) and elections over random alive subsets.
func (h *history) next(r *rand.Rand, view *FSM, i int) Command {
	name := crashGroups[r.Intn(len(crashGroups))]
	var g Group
	var ok bool
	view.View(func(s *State) { g, ok = s.Group("c", name) })
	k := r.Intn(100)
	switch {
	case k < 30:
		return Command{Op: OpPeer, PeerID: fmt.Sprintf("p%d", i), PeerAddr: fmt.Sprintf("10.9.0.%d:9876", i)}
	case k < 55 || !ok:
		addr := fmt.Sprintf("10.0.%s.%d:10911", name[1:], 1+r.Intn(4))
		return Command{Op: OpRegister, Cluster: "c", BrokerName: name, Addr: addr, HAAddr: addr + "-ha"}
	}
	var ids []int64
	for id := range g.Replicas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	subset := func() []int64 {
		var out []int64
		for _, id := range ids {
			if r.Intn(3) > 0 {
				out = append(out, id)
			}
		}
		return out
	}
	if k < 75 {
		c := Command{Op: OpAlter, Cluster: "c", BrokerName: name, MasterID: g.MasterID,
			MasterEpoch: g.MasterEpoch, SyncStateSetEpoch: g.SyncStateSetEpoch, Set: append(subset(), g.MasterID)}
		if r.Intn(5) == 0 {
			c.SyncStateSetEpoch-- // stale: fenced
		}
		return c
	}
	c := Command{Op: OpElect, Cluster: "c", BrokerName: name}
	for _, id := range subset() {
		c.Alive = append(c.Alive, Candidate{ID: id, Epoch: g.MasterEpoch, MaxOffset: int64(r.Intn(1000))})
	}
	return c
}

// acked records a command whose Apply future returned nil.
func (h *history) acked(t *testing.T, c Command, res Result, index uint64) {
	h.ackCount++
	h.maxIndex = max(h.maxIndex, index)
	switch c.Op {
	case OpPeer:
		h.peers[c.PeerID] = c.PeerAddr
	case OpRegister:
		if res.Code == 0 {
			if h.replicas[c.BrokerName] == nil {
				h.replicas[c.BrokerName] = map[string]bool{}
			}
			h.replicas[c.BrokerName][c.Addr] = true
		}
	}
	if g := res.Group; g.BrokerName != "" {
		e := h.epochs[g.BrokerName]
		h.epochs[g.BrokerName] = [2]int64{max(e[0], g.MasterEpoch), max(e[1], g.SyncStateSetEpoch)}
		h.master(t, g)
	}
}

// master records g's master for g's master epoch, failing t when that
// epoch already had another master.
func (h *history) master(t *testing.T, g Group) {
	m := h.masterOf[g.BrokerName]
	if m == nil {
		m = map[int64]int64{}
		h.masterOf[g.BrokerName] = m
	}
	if id, ok := m[g.MasterEpoch]; ok && id != g.MasterID {
		t.Fatalf("group %s has two masters in epoch %d: %d and %d", g.BrokerName, g.MasterEpoch, id, g.MasterID)
	}
	m[g.MasterEpoch] = g.MasterID
}

// observe samples every running node's state: per node incarnation the
// epochs never go backwards; masters are recorded per epoch.
func (h *history) observe(t *testing.T, g *crashGroup) {
	for i, n := range g.nodes {
		if n.r == nil {
			continue
		}
		seen := h.seen[n.fsm]
		if seen == nil {
			seen = map[string][2]int64{}
			h.seen[n.fsm] = seen
		}
		n.fsm.View(func(s *State) {
			for _, gr := range s.Groups {
				last := seen[gr.BrokerName]
				if gr.MasterEpoch < last[0] || gr.SyncStateSetEpoch < last[1] {
					t.Fatalf("seed %d: node %d: group %s's epochs went back from %v to (%d, %d)", g.seed, i,
						gr.BrokerName, last, gr.MasterEpoch, gr.SyncStateSetEpoch)
				}
				seen[gr.BrokerName] = [2]int64{gr.MasterEpoch, gr.SyncStateSetEpoch}
				h.master(t, *gr)
			}
		})
	}
}

// check tests one restarted node's state against the history.
func (h *history) check(t *testing.T, seed int64, node int, s *State) {
	for id, addr := range h.peers {
		if s.Peers[id] != addr {
			t.Fatalf("seed %d: node %d lost the acknowledged peer record %s=%s (has %q)", seed, node, id, addr, s.Peers[id])
		}
	}
	for name, addrs := range h.replicas {
		g, ok := s.Group("c", name)
		for addr := range addrs {
			found := false
			for _, r := range g.Replicas {
				found = found || r.Addr == addr
			}
			if !ok || !found {
				t.Fatalf("seed %d: node %d lost the acknowledged registration of %s in %s", seed, node, addr, name)
			}
		}
	}
	for name, e := range h.epochs {
		g, _ := s.Group("c", name)
		if g.MasterEpoch < e[0] || g.SyncStateSetEpoch < e[1] {
			t.Fatalf("seed %d: node %d: group %s at epochs (%d, %d), below the acknowledged %v", seed, node, name,
				g.MasterEpoch, g.SyncStateSetEpoch, e)
		}
	}
	for _, g := range s.Groups {
		h.master(t, *g)
		if g.MasterID != 0 && !slices.Contains(g.SyncStateSet, g.MasterID) {
			t.Fatalf("seed %d: node %d: group %s's master %d is outside its sync-state set %v", seed, node, g.BrokerName, g.MasterID, g.SyncStateSet)
		}
		for _, id := range g.SyncStateSet {
			if _, ok := g.Replicas[id]; !ok {
				t.Fatalf("seed %d: node %d: group %s's sync-state set %v names unknown replica %d", seed, node, g.BrokerName, g.SyncStateSet, id)
			}
		}
	}
}
