package controller

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeBodies feeds the controller's body decoders arbitrary bytes:
// they must not panic, and a decoded sync-state set must re-encode and
// decode to itself.
func FuzzDecodeBodies(f *testing.F) {
	f.Add([]byte(`{"syncStateSet":[1,2],"syncStateSetEpoch":3}`))
	f.Add([]byte(`{"syncStateSet":["1"],"syncStateSetEpoch":"3"}`))
	f.Add([]byte(`["broker-a","broker-b"]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := DecodeSyncStateSet(b); err == nil {
			again, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := DecodeSyncStateSet(again)
			if err != nil || len(s2.SyncStateSet) != len(s.SyncStateSet) || s2.SyncStateSetEpoch != s.SyncStateSetEpoch {
				t.Fatalf("round trip %q -> %q: %+v %v", b, again, s2, err)
			}
		}
		_, _ = DecodeBrokerNames(b)
	})
}

// FuzzRestore feeds the snapshot decoder arbitrary bytes: a restored state
// must take commands without panicking.
func FuzzRestore(f *testing.F) {
	good := NewFSM()
	good.Apply(Command{Op: OpRegister, Cluster: "c", BrokerName: "b", Addr: "a1"})
	b, _ := good.Snapshot()
	f.Add(b)
	f.Add([]byte(`{"groups":{"c/b":null},"peers":null}`))
	f.Add([]byte(`{"groups":{"c/b":{"replicas":null,"syncStateSet":null}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fsm := NewFSM()
		if err := fsm.Restore(b); err != nil {
			return
		}
		if r := fsm.Apply(Command{Op: OpRegister, Cluster: "c", BrokerName: "b", Addr: "a2"}); r.Code == 0 && r.ReplicaID < 1 {
			t.Fatalf("register after restore gave id %d", r.ReplicaID)
		}
		fsm.Apply(Command{Op: OpElect, Cluster: "c", BrokerName: "b", Alive: []Candidate{{ID: 1}, {ID: 2}}})
		fsm.Apply(Command{Op: OpAlter, Cluster: "c", BrokerName: "b", MasterID: 1, MasterEpoch: 1, Set: []int64{1}})
		fsm.Apply(Command{Op: OpPeer, PeerID: "x", PeerAddr: "y"})
		if _, err := fsm.Snapshot(); err != nil {
			t.Fatal(err)
		}
	})
}
