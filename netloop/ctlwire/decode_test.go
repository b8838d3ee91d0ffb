package ctlwire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestDecode checks every served code decodes to its typed request, and
// that a request that does not decode becomes the refusal the controller
// answers: INVALID_REQUEST after the leader check for the leader's codes,
// INVALID_PARAMETER on any controller for a bad configuration update.
func TestDecode(t *testing.T) {
	req := func(code int32, fields map[string]string, body string) *remoting.Command {
		return remoting.NewRequest(code, fields, []byte(body))
	}
	hb := map[string]string{FieldClusterName: "c", FieldBrokerName: "b", FieldBrokerAddr: "h:1", FieldHAServerAddr: "h:2",
		FieldBrokerID: "2", FieldEpoch: "3", FieldMaxOffset: "100", FieldConfirmOffset: "90"}
	wantHB := controller.HeartbeatRequest{Heartbeat: controller.Heartbeat{Cluster: "c", BrokerName: "b", BrokerAddr: "h:1", HAAddr: "h:2",
		ReplicaID: 2, Epoch: 3, MaxOffset: 100, Confirmed: 90}}
	for _, tc := range []struct {
		name string
		cmd  *remoting.Command
		want controller.Request
	}{
		{"metadata", req(remoting.ControllerGetMetadataInfo, nil, ""), controller.MetadataRequest{}},
		{"get config", req(remoting.GetControllerConfig, nil, ""), controller.GetConfigRequest{}},
		{"update config", req(remoting.UpdateControllerConfig, nil, "a = 1 \nb=x\n"), controller.UpdateConfigRequest{Values: map[string]string{"a": "1", "b": "x"}}},
		{"heartbeat", req(remoting.BrokerHeartbeat, hb, ""), wantHB},
		{"heartbeat without addr", req(remoting.BrokerHeartbeat, map[string]string{FieldBrokerName: "b"}, ""),
			invalid("controller: heartbeat: brokerName and brokerAddr are required")},
		{"heartbeat bad epoch", req(remoting.BrokerHeartbeat, map[string]string{FieldBrokerName: "b", FieldBrokerAddr: "h:1", FieldEpoch: "x"}, ""),
			invalid(`controller: header field epoch: strconv.ParseInt: parsing "x": invalid syntax`)},
		{"register", req(remoting.ControllerRegisterBroker, map[string]string{FieldClusterName: "c", FieldBrokerName: "b", FieldBrokerAddress: "h:1", FieldBrokerID: "2"}, ""),
			controller.HeartbeatRequest{Heartbeat: controller.Heartbeat{Cluster: "c", BrokerName: "b", BrokerAddr: "h:1", ReplicaID: 2}}},
		{"register without address", req(remoting.ControllerRegisterBroker, map[string]string{FieldBrokerName: "b", FieldBrokerID: "2"}, ""),
			invalid("controller: register needs brokerName, brokerAddress and a numeric brokerId")},
		{"apply id", req(remoting.ControllerApplyBrokerID, map[string]string{FieldClusterName: "c", FieldBrokerName: "b", FieldAppliedBrokerID: "2", FieldRegisterCheckCode: "h:1;17"}, ""),
			controller.ApplyBrokerIDRequest{Cluster: "c", BrokerName: "b", Addr: "h:1", ID: 2}},
		{"apply id 0", req(remoting.ControllerApplyBrokerID, map[string]string{FieldBrokerName: "b", FieldAppliedBrokerID: "0", FieldRegisterCheckCode: "h:1;17"}, ""),
			invalid("controller: apply broker id needs appliedBrokerId >= 1 and registerCheckCode addr;time")},
		{"next id", req(remoting.ControllerGetNextBrokerID, map[string]string{FieldClusterName: "c", FieldBrokerName: "b"}, ""),
			controller.NextBrokerIDRequest{Cluster: "c", BrokerName: "b"}},
		{"alter", req(remoting.ControllerAlterSyncStateSet, map[string]string{FieldBrokerName: "b", FieldMasterBrokerID: "1", FieldMasterEpoch: `"2"`},
			`{"syncStateSet":[1,"2"],"syncStateSetEpoch":3}`),
			controller.AlterRequest{BrokerName: "b", MasterID: 1, MasterEpoch: 2, Set: controller.SyncStateSetBody{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 3}}},
		{"alter bad body", req(remoting.ControllerAlterSyncStateSet, map[string]string{FieldBrokerName: "b"}, "{"),
			invalid("controller: alter sync-state set: bad header or body")},
		{"replica info", req(remoting.ControllerGetReplicaInfo, map[string]string{FieldBrokerName: "b"}, ""), controller.ReplicaInfoRequest{BrokerName: "b"}},
		{"sync state data", req(remoting.ControllerGetSyncStateData, nil, `["a","b"]`), controller.SyncStateDataRequest{BrokerNames: []string{"a", "b"}}},
		{"epoch cache", req(remoting.GetBrokerEpochCache, map[string]string{FieldBrokerName: "b"}, ""), controller.EpochCacheRequest{BrokerName: "b"}},
		{"elect", req(remoting.ControllerElectMaster, map[string]string{FieldBrokerName: "b", FieldBrokerID: "2"}, ""), controller.ElectRequest{BrokerName: "b", BrokerID: 2}},
		{"elect bad id", req(remoting.ControllerElectMaster, map[string]string{FieldBrokerName: "b", FieldBrokerID: "x"}, ""), controller.ElectRequest{BrokerName: "b"}},
	} {
		got, ok := Decode(tc.cmd)
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v %v, want %#v", tc.name, got, ok, tc.want)
		}
	}
	if got, ok := Decode(req(remoting.SendMessage, nil, "")); ok || got != nil {
		t.Errorf("SEND_MESSAGE decoded as a controller request: %#v", got)
	}
	for _, code := range ServedCodes {
		if _, ok := Decode(req(code, nil, "")); !ok {
			t.Errorf("served code %d does not decode", code)
		}
	}
}

// TestDecodeSyncStateDataBadBody: a body that is not a list of names is
// refused with the decoder's reason.
func TestDecodeSyncStateDataBadBody(t *testing.T) {
	got, _ := Decode(remoting.NewRequest(remoting.ControllerGetSyncStateData, nil, []byte(`{"a":1}`)))
	m, ok := got.(controller.Malformed)
	if !ok || !m.LeaderOnly || m.Code != controller.CodeInvalidRequest || !strings.HasPrefix(m.Remark, "controller: broker names body: ") {
		t.Fatalf("got %#v", got)
	}
}

// TestDecodeConfigUpdateRefusals: an oversize or unparsable update body is
// refused INVALID_PARAMETER by any controller (not only the leader).
func TestDecodeConfigUpdateRefusals(t *testing.T) {
	big := strings.Repeat("k=v\n", maxConfigBody/4+1)
	for name, body := range map[string]string{"oversize": big, "not properties": "a=\\u12"} {
		got, _ := Decode(remoting.NewRequest(remoting.UpdateControllerConfig, nil, []byte(body)))
		m, ok := got.(controller.Malformed)
		if !ok || m.LeaderOnly || m.Code != remoting.InvalidParameter || !strings.HasPrefix(m.Remark, "controller: nothing changed: ") {
			t.Errorf("%s: got %#v", name, got)
		}
	}
}
