// Package role holds a broker's place in its replicated group: standalone
// (no replication), master or replica, with the master epoch and the
// sync-state set the controller last gave it, and whether the master has
// fenced itself for want of a lease.
//
// One Holder per broker is written by whoever learns of a change (the
// controller client stage) and read by every stage whose behaviour depends
// on the role: the CommitLog writer (only a master acknowledges sends, and
// not while fenced), the dispatcher (everything derived is built only up to
// the confirmed offset), the timer dequeue, the transaction checks and
// retention (master only), the pull path (suggestWhichBrokerId) and the
// registrar (brokerId 0 for the master). Reads are lock-free; subscribers
// are called, in order, from the goroutine that calls Set.
package role

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Kind is what a broker is in its group.
type Kind int

const (
	// Standalone is a broker without replication (--replication none):
	// it is its group's only member and always the master.
	Standalone Kind = iota
	// Master is the member the controller elected: it takes sends and
	// runs the master-only stages.
	Master
	// Replica follows the master's CommitLog and serves reads of
	// confirmed data.
	Replica
)

// String returns "standalone", "master" or "replica".
func (k Kind) String() string {
	switch k {
	case Standalone:
		return "standalone"
	case Master:
		return "master"
	case Replica:
		return "replica"
	}
	return fmt.Sprintf("role(%d)", int(k))
}

// State is one snapshot of a broker's role. The zero State is a standalone
// broker with id 0.
type State struct {
	// Kind is the role.
	Kind Kind
	// BrokerID is the id the broker registers with: 0 while master, its
	// controller-assigned replica id (>= 1) otherwise; -1 while the
	// controller has not answered yet (nothing is registered).
	BrokerID int64
	// ReplicaID is the broker's persistent id in its group (>= 1; 0 when
	// standalone), whatever its role.
	ReplicaID int64
	// Epoch is the master epoch this state belongs to.
	Epoch int64
	// MasterAddr and MasterHAAddr are the master's remoting and
	// replication addresses (empty while the group has no master).
	MasterAddr, MasterHAAddr string
	// SyncStateSet holds the replica ids that hold every acknowledged
	// byte, sorted; SyncStateSetEpoch is its own epoch.
	SyncStateSet      []int64
	SyncStateSetEpoch int64
	// Fenced is set on a master that could not renew its lease: it
	// acknowledges nothing and runs no master-only stage until renewed.
	Fenced bool
}

// IsMaster reports whether the broker may take sends and run the
// master-only stages: a standalone broker, or an unfenced master.
func (s State) IsMaster() bool {
	return s.Kind == Standalone || (s.Kind == Master && !s.Fenced)
}

// InSyncStateSet reports whether replica id is in the sync-state set.
func (s State) InSyncStateSet(id int64) bool {
	return slices.Contains(s.SyncStateSet, id)
}

// Holder holds the current State and tells subscribers of changes.
type Holder struct {
	cur  atomic.Pointer[State]
	mu   sync.Mutex // serializes Set and guards subs
	subs []func(old, cur State)
}

// NewHolder returns a Holder starting at initial.
func NewHolder(initial State) *Holder {
	h := &Holder{}
	initial.SyncStateSet = slices.Clone(initial.SyncStateSet)
	slices.Sort(initial.SyncStateSet)
	h.cur.Store(&initial)
	return h
}

// Get returns the current State. Safe from any goroutine; nil-safe (a nil
// Holder is a standalone broker).
func (h *Holder) Get() State {
	if h == nil {
		return State{}
	}
	return *h.cur.Load()
}

// Set makes s current and calls every subscriber with the old and new
// states (only when they differ), in subscription order, on the caller's
// goroutine. Subscribers must not block: hand the change to a stage.
func (h *Holder) Set(s State) {
	s.SyncStateSet = slices.Clone(s.SyncStateSet)
	slices.Sort(s.SyncStateSet)
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.cur.Load()
	if equal(old, s) {
		return
	}
	h.cur.Store(&s)
	for _, f := range h.subs {
		f(old, s)
	}
}

// Subscribe adds f, called on every later change (see Set).
func (h *Holder) Subscribe(f func(old, cur State)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs = append(h.subs, f)
}

func equal(a, b State) bool {
	return a.Kind == b.Kind && a.BrokerID == b.BrokerID && a.ReplicaID == b.ReplicaID &&
		a.Epoch == b.Epoch && a.MasterAddr == b.MasterAddr && a.MasterHAAddr == b.MasterHAAddr &&
		slices.Equal(a.SyncStateSet, b.SyncStateSet) && a.SyncStateSetEpoch == b.SyncStateSetEpoch &&
		a.Fenced == b.Fenced
}
