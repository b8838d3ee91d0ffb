package controller

import (
	"encoding/json"
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
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
		_, _ = ParseRoleAnswer(&remoting.Command{Body: b, ExtFields: map[string]string{FieldMasterEpoch: string(b)}})
	})
}

// FuzzParseHeartbeat feeds the heartbeat header parser arbitrary fields.
func FuzzParseHeartbeat(f *testing.F) {
	f.Add("c", "b", "127.0.0.1:10911", "2", "3", "100", "90")
	f.Add("", "b", "h:1", "-1", " 7 ", "\"5\"", "null")
	f.Fuzz(func(t *testing.T, cluster, name, addr, id, epoch, maxOff, conf string) {
		cmd := remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{
			FieldClusterName: cluster, FieldBrokerName: name, FieldBrokerAddr: addr, FieldBrokerID: id,
			FieldEpoch: epoch, FieldMaxOffset: maxOff, FieldConfirmOffset: conf}, nil)
		h, err := ParseHeartbeat(cmd)
		if err != nil {
			return
		}
		if h.ReplicaID < 0 || h.BrokerName == "" || h.BrokerAddr == "" {
			t.Fatalf("accepted %+v", h)
		}
		h2, err := ParseHeartbeat(remoting.NewRequest(remoting.BrokerHeartbeat, h.Fields(), nil))
		if err != nil || h2 != h {
			t.Fatalf("round trip %+v -> %+v %v", h, h2, err)
		}
	})
}
