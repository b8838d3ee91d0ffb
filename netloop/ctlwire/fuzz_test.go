package ctlwire

import (
	"testing"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// FuzzParseRoleAnswer feeds the role answer decoder arbitrary bodies and
// fields: it must not panic.
func FuzzParseRoleAnswer(f *testing.F) {
	f.Add([]byte(`{"syncStateSet":[1,2],"syncStateSetEpoch":3}`))
	f.Add([]byte(`{"syncStateSet":["1"],"syncStateSetEpoch":"3"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
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
		h2, err := ParseHeartbeat(remoting.NewRequest(remoting.BrokerHeartbeat, HeartbeatFields(h), nil))
		if err != nil || h2 != h {
			t.Fatalf("round trip %+v -> %+v %v", h, h2, err)
		}
	})
}
