package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/wheelmq/wheelmq/actors/wirecode"
)

// Response codes of the controller (RocketMQ ResponseCode CONTROLLER_*,
// defined in actors/wirecode).
const (
	CodeFencedMasterEpoch       = wirecode.ControllerFencedMasterEpoch
	CodeFencedSyncStateSetEpoch = wirecode.ControllerFencedSyncStateSetEpoch
	CodeInvalidMaster           = wirecode.ControllerInvalidMaster
	CodeInvalidReplicas         = wirecode.ControllerInvalidReplicas
	CodeMasterNotAvailable      = wirecode.ControllerMasterNotAvailable
	CodeInvalidRequest          = wirecode.ControllerInvalidRequest
	CodeBrokerNotAlive          = wirecode.ControllerBrokerNotAlive
	CodeNotLeader               = wirecode.ControllerNotLeader
	CodeBrokerMetadataNotExist  = wirecode.ControllerBrokerMetadataNotExist
	CodeElectMasterFailed       = wirecode.ControllerElectMasterFailed
	CodeBrokerIDInvalid         = wirecode.ControllerBrokerIDInvalid
)

// Replica is one member of a broker group: its remoting and replication
// addresses.
type Replica struct {
	Addr   string `json:"addr"`
	HAAddr string `json:"haAddr,omitempty"`
}

// Group is the controller's record of one broker group (cluster +
// brokerName).
type Group struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	// Replicas maps replica id (>= 1) to the replica's addresses.
	Replicas map[int64]Replica `json:"replicas"`
	// NextID is the id the next new replica gets.
	NextID int64 `json:"nextId"`
	// MasterID is the master's replica id; 0: no master.
	MasterID          int64   `json:"masterId"`
	MasterEpoch       int64   `json:"masterEpoch"`
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int64   `json:"syncStateSetEpoch"`
}

// clone returns a deep copy of g.
func (g *Group) clone() Group {
	c := *g
	c.Replicas = make(map[int64]Replica, len(g.Replicas))
	for k, v := range g.Replicas {
		c.Replicas[k] = v
	}
	c.SyncStateSet = slices.Clone(g.SyncStateSet)
	return c
}

// Master returns the master's addresses (zero Replica when none).
func (g *Group) Master() Replica {
	if g.MasterID == 0 {
		return Replica{}
	}
	return g.Replicas[g.MasterID]
}

// Candidate is an alive replica as the leader's liveness table sees it:
// the input of an election.
type Candidate struct {
	ID        int64 `json:"id"`
	Epoch     int64 `json:"epoch"`
	MaxOffset int64 `json:"maxOffset"`
}

// Op names a command.
type Op string

// The commands of the replicated state machine.
const (
	// OpRegister assigns (or confirms) a replica id and records the
	// replica's addresses; the first replica of an empty group becomes
	// its master.
	OpRegister Op = "register"
	// OpAlter replaces the sync-state set (fenced by both epochs).
	OpAlter Op = "alter"
	// OpElect elects a master among SyncStateSet ∩ Alive.
	OpElect Op = "elect"
	// OpPeer records a controller's remoting address by raft server id.
	OpPeer Op = "peer"
)

// Command is one entry of the raft log, JSON-encoded.
type Command struct {
	Op         Op     `json:"op"`
	Cluster    string `json:"cluster,omitempty"`
	BrokerName string `json:"brokerName,omitempty"`
	// OpRegister: the replica's persisted id (0: none yet) and addresses.
	ReplicaID int64  `json:"replicaId,omitempty"`
	Addr      string `json:"addr,omitempty"`
	HAAddr    string `json:"haAddr,omitempty"`
	// OpAlter: the proposer's view (fencing) and the new set.
	MasterID          int64   `json:"masterId,omitempty"`
	MasterEpoch       int64   `json:"masterEpoch,omitempty"`
	SyncStateSetEpoch int64   `json:"syncStateSetEpoch,omitempty"`
	Set               []int64 `json:"set,omitempty"`
	// OpElect: the alive replicas, and an admin's designated id (0: any).
	Alive      []Candidate `json:"alive,omitempty"`
	Designated int64       `json:"designated,omitempty"`
	// OpPeer: raft server id and remoting address.
	PeerID   string `json:"peerId,omitempty"`
	PeerAddr string `json:"peerAddr,omitempty"`
}

// Result is what applying a Command gave: Code 0 (success) or a
// controller response code, Remark, the group after the command and the
// replica id a register assigned.
type Result struct {
	Code      int32
	Remark    string
	Group     Group
	ReplicaID int64
}

// State is the replicated state: every broker group and the controllers'
// remoting addresses. Its methods are pure (no I/O); FSM adds the locking.
type State struct {
	Groups map[string]*Group `json:"groups"`
	Peers  map[string]string `json:"peers"`
}

// NewState returns an empty State.
func NewState() *State {
	return &State{Groups: map[string]*Group{}, Peers: map[string]string{}}
}

// groupKey is the key of a group in State.Groups.
func groupKey(cluster, brokerName string) string { return cluster + "/" + brokerName }

// Group returns a copy of the group, if known.
func (s *State) Group(cluster, brokerName string) (Group, bool) {
	g, ok := s.Groups[groupKey(cluster, brokerName)]
	if !ok {
		return Group{}, false
	}
	return g.clone(), true
}

// Apply applies c and returns its result. Refused commands change nothing.
func (s *State) Apply(c Command) Result {
	switch c.Op {
	case OpRegister:
		return s.register(c)
	case OpAlter:
		return s.alter(c)
	case OpElect:
		return s.elect(c)
	case OpPeer:
		if c.PeerID == "" {
			return Result{Code: CodeInvalidRequest, Remark: "peer without id"}
		}
		s.Peers[c.PeerID] = c.PeerAddr
		return Result{}
	}
	return Result{Code: CodeInvalidRequest, Remark: fmt.Sprintf("unknown controller command %q", c.Op)}
}

func (s *State) register(c Command) Result {
	if c.BrokerName == "" || c.Addr == "" || c.ReplicaID < 0 {
		return Result{Code: CodeInvalidRequest, Remark: "register: brokerName, brokerAddr and a replica id >= 0 are required"}
	}
	k := groupKey(c.Cluster, c.BrokerName)
	g, ok := s.Groups[k]
	if !ok {
		g = &Group{Cluster: c.Cluster, BrokerName: c.BrokerName, Replicas: map[int64]Replica{}, NextID: 1}
		s.Groups[k] = g
	}
	id := c.ReplicaID
	if id == 0 {
		for rid, r := range g.Replicas {
			if r.Addr == c.Addr {
				id = rid
				break
			}
		}
	}
	if id == 0 {
		id = g.NextID
	}
	if id >= g.NextID {
		g.NextID = id + 1
	}
	g.Replicas[id] = Replica{Addr: c.Addr, HAAddr: c.HAAddr}
	if g.MasterID == 0 && g.MasterEpoch == 0 && len(g.Replicas) == 1 {
		// The first replica of a new group: master with SSS {itself}.
		g.MasterID, g.MasterEpoch = id, 1
		g.SyncStateSet, g.SyncStateSetEpoch = []int64{id}, 1
	}
	return Result{Group: g.clone(), ReplicaID: id}
}

func (s *State) alter(c Command) Result {
	g, ok := s.Groups[groupKey(c.Cluster, c.BrokerName)]
	if !ok {
		return Result{Code: CodeBrokerMetadataNotExist, Remark: "alter sync-state set: unknown broker group " + c.BrokerName}
	}
	switch {
	case g.MasterID == 0 || c.MasterID != g.MasterID:
		return Result{Code: CodeInvalidMaster, Remark: fmt.Sprintf("alter sync-state set: %d is not the master (master %d)", c.MasterID, g.MasterID), Group: g.clone()}
	case c.MasterEpoch != g.MasterEpoch:
		return Result{Code: CodeFencedMasterEpoch, Remark: fmt.Sprintf("alter sync-state set: master epoch %d, current %d", c.MasterEpoch, g.MasterEpoch), Group: g.clone()}
	case c.SyncStateSetEpoch != g.SyncStateSetEpoch:
		return Result{Code: CodeFencedSyncStateSetEpoch, Remark: fmt.Sprintf("alter sync-state set: sync-state set epoch %d, current %d", c.SyncStateSetEpoch, g.SyncStateSetEpoch), Group: g.clone()}
	}
	set := sortedUnique(c.Set)
	if !slices.Contains(set, g.MasterID) {
		return Result{Code: CodeInvalidReplicas, Remark: "alter sync-state set: the set must hold the master", Group: g.clone()}
	}
	for _, id := range set {
		if _, ok := g.Replicas[id]; !ok {
			return Result{Code: CodeInvalidReplicas, Remark: fmt.Sprintf("alter sync-state set: unknown replica %d", id), Group: g.clone()}
		}
	}
	if !slices.Equal(set, g.SyncStateSet) {
		g.SyncStateSet = set
		g.SyncStateSetEpoch++
	}
	return Result{Group: g.clone()}
}

// elect chooses a master among SyncStateSet ∩ Alive: the current master
// when it is alive (and no other was designated), else the candidate with
// the highest (epoch, maxOffset), lowest id on ties. Never a replica
// outside the sync-state set. With no candidate the group is left without
// a master (masterEpoch+1 fences the old one) and its set is kept, so that
// a returning member of it can be elected.
func (s *State) elect(c Command) Result {
	g, ok := s.Groups[groupKey(c.Cluster, c.BrokerName)]
	if !ok {
		return Result{Code: CodeBrokerMetadataNotExist, Remark: "elect master: unknown broker group " + c.BrokerName}
	}
	alive := map[int64]Candidate{}
	for _, a := range c.Alive {
		alive[a.ID] = a
	}
	var cands []Candidate
	for _, id := range g.SyncStateSet {
		if a, ok := alive[id]; ok {
			cands = append(cands, a)
		}
	}
	if c.Designated != 0 {
		if _, ok := alive[c.Designated]; !ok || !slices.Contains(g.SyncStateSet, c.Designated) {
			return Result{Code: CodeElectMasterFailed, Remark: fmt.Sprintf("elect master: %d is not an alive member of the sync-state set %v", c.Designated, g.SyncStateSet), Group: g.clone()}
		}
		if c.Designated == g.MasterID {
			return Result{Group: g.clone()}
		}
		return s.promote(g, c.Designated, cands)
	}
	if _, ok := alive[g.MasterID]; ok && g.MasterID != 0 {
		return Result{Group: g.clone()}
	}
	if len(cands) == 0 {
		if g.MasterID != 0 {
			g.MasterID = 0
			g.MasterEpoch++
		}
		return Result{Code: CodeMasterNotAvailable, Remark: fmt.Sprintf("elect master: no alive member of the sync-state set %v", g.SyncStateSet), Group: g.clone()}
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Epoch != b.Epoch {
			return a.Epoch > b.Epoch
		}
		if a.MaxOffset != b.MaxOffset {
			return a.MaxOffset > b.MaxOffset
		}
		return a.ID < b.ID
	})
	return s.promote(g, cands[0].ID, cands)
}

// promote makes id the master; the new set is the alive part of the old.
func (s *State) promote(g *Group, id int64, cands []Candidate) Result {
	set := make([]int64, 0, len(cands))
	for _, c := range cands {
		set = append(set, c.ID)
	}
	g.MasterID = id
	g.MasterEpoch++
	g.SyncStateSet = sortedUnique(set)
	g.SyncStateSetEpoch++
	return Result{Group: g.clone()}
}

func sortedUnique(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// FSM guards a State for concurrent reads while raft applies commands.
type FSM struct {
	mu sync.RWMutex
	st *State
}

// NewFSM returns an FSM over an empty State.
func NewFSM() *FSM { return &FSM{st: NewState()} }

// Apply applies one command under the lock.
func (f *FSM) Apply(c Command) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.Apply(c)
}

// View calls fn with the State under the read lock; fn must not keep it.
func (f *FSM) View(fn func(*State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.st)
}

// Snapshot returns the State as JSON.
func (f *FSM) Snapshot() ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(f.st)
	if err != nil {
		return nil, fmt.Errorf("controller snapshot: %w", err)
	}
	return b, nil
}

// Restore replaces the State by a Snapshot's JSON.
func (f *FSM) Restore(b []byte) error {
	st := NewState()
	if err := json.Unmarshal(b, st); err != nil {
		return fmt.Errorf("controller restore: %w", err)
	}
	if st.Groups == nil {
		st.Groups = map[string]*Group{}
	}
	if st.Peers == nil {
		st.Peers = map[string]string{}
	}
	for k, g := range st.Groups {
		if g == nil {
			delete(st.Groups, k)
			continue
		}
		if g.Replicas == nil {
			g.Replicas = map[int64]Replica{}
		}
		g.NextID = max(g.NextID, 1)
		for id := range g.Replicas {
			if id < 1 {
				delete(g.Replicas, id) // never written: ids start at 1
				continue
			}
			g.NextID = max(g.NextID, id+1)
		}
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}
