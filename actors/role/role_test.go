package role

import "testing"

func TestHolderSetNotifiesOnChangeOnly(t *testing.T) {
	h := NewHolder(State{})
	var seen []State
	h.Subscribe(func(_, cur State) { seen = append(seen, cur) })
	h.Set(State{})
	if len(seen) != 0 {
		t.Fatalf("unchanged Set notified: %v", seen)
	}
	h.Set(State{Kind: Master, ReplicaID: 1, Epoch: 2, SyncStateSet: []int64{3, 1}})
	if len(seen) != 1 || !seen[0].IsMaster() || seen[0].SyncStateSet[0] != 1 {
		t.Fatalf("seen = %+v", seen)
	}
	h.Set(State{Kind: Master, ReplicaID: 1, Epoch: 2, SyncStateSet: []int64{1, 3}, Fenced: true})
	if len(seen) != 2 || seen[1].IsMaster() {
		t.Fatalf("fenced master counts as master: %+v", seen)
	}
	if !h.Get().InSyncStateSet(3) || h.Get().InSyncStateSet(2) {
		t.Fatalf("InSyncStateSet wrong: %+v", h.Get())
	}
	var nilHolder *Holder
	if nilHolder.Get().Kind != Standalone || !nilHolder.Get().IsMaster() {
		t.Fatal("nil Holder is not a standalone master")
	}
}
