package ctlwire

import (
	"maps"
	"testing"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestEncode checks the header fields and bodies of each kind of answer,
// as RocketMQ's controller answers carry them, and that a refusal carries
// only its code and remark (a follower's also the leader's address).
func TestEncode(t *testing.T) {
	g := controller.Group{Cluster: "c", BrokerName: "b", MasterID: 1, MasterEpoch: 4, SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 5,
		Replicas: map[int64]controller.Replica{1: {Addr: "h:1", HAAddr: "h:2"}, 2: {Addr: "i:1", HAAddr: "i:2"}}}
	role := map[string]string{FieldClusterName: "c", FieldBrokerName: "b", FieldBrokerID: "2", FieldMasterBrokerID: "1",
		FieldMasterAddress: "h:1", FieldMasterHAAddress: "h:2", FieldMasterEpoch: "4", FieldSyncStateSetEpoch: "5"}
	altered := maps.Clone(role)
	altered[FieldNewSyncStateSetEpoch] = "5"
	for _, tc := range []struct {
		name   string
		a      controller.Answer
		code   int32
		remark string
		fields map[string]string
		body   string
	}{
		{"refusal", controller.Answer{Code: controller.CodeInvalidRequest, Remark: "controller: no"}, controller.CodeInvalidRequest, "controller: no", map[string]string{}, ""},
		{"not leader", controller.Answer{Code: controller.CodeNotLeader, Remark: "r", Result: controller.NotLeader{}}, controller.CodeNotLeader, "r",
			map[string]string{FieldLeaderAddress: ""}, ""},
		{"role", controller.Answer{Result: controller.Role{Group: g, ReplicaID: 2}}, 0, "", role, `{"syncStateSet":[1,2],"syncStateSetEpoch":5}`},
		{"role of an empty set", controller.Answer{Result: controller.Role{Group: controller.Group{Cluster: "c", BrokerName: "b"}}}, 0, "",
			map[string]string{FieldClusterName: "c", FieldBrokerName: "b", FieldBrokerID: "0", FieldMasterBrokerID: "0", FieldMasterAddress: "",
				FieldMasterHAAddress: "", FieldMasterEpoch: "0", FieldSyncStateSetEpoch: "0"}, `{"syncStateSet":[],"syncStateSetEpoch":0}`},
		{"altered", controller.Answer{Result: controller.Role{Group: g, ReplicaID: 2, Altered: true}}, 0, "", altered, `{"syncStateSet":[1,2],"syncStateSetEpoch":5}`},
		{"next id", controller.Answer{Result: controller.NextBrokerID{Cluster: "c", BrokerName: "b", Next: 3}}, 0, "",
			map[string]string{FieldClusterName: "c", FieldBrokerName: "b", FieldNextBrokerID: "3"}, ""},
		{"id applied", controller.Answer{Result: controller.BrokerIDApplied{Cluster: "c", BrokerName: "b"}}, 0, "",
			map[string]string{FieldClusterName: "c", FieldBrokerName: "b"}, ""},
		{"elected", controller.Answer{Result: controller.Elected{Group: g}}, 0, "",
			map[string]string{FieldMasterBrokerID: "1", FieldMasterAddress: "h:1", FieldMasterEpoch: "4", FieldSyncStateSetEpoch: "5"},
			`{"cluster":"c","brokerName":"b","brokerAddrs":{"1":"h:1","2":"i:1"}}`},
		{"metadata", controller.Answer{Result: controller.Metadata{Group: "g", LeaderID: "n1", LeaderAddr: "h:9876", IsLeader: true, Peers: []string{"n1", "n2"}}}, 0, "",
			map[string]string{FieldGroup: "g", FieldLeaderID: "n1", FieldLeaderAddress: "h:9876", FieldIsLeader: "true", FieldPeers: "n1;n2"}, ""},
		{"config", controller.Answer{Result: controller.ConfigView{"b": "2", "a": "1"}}, 0, "", map[string]string{}, "a=1\nb=2\n"},
		{"epoch cache", controller.Answer{Result: controller.EpochEntryCache{ClusterName: "c", BrokerName: "b", BrokerID: 1, EpochList: []controller.EpochEntry{}}}, 0, "",
			map[string]string{}, `{"clusterName":"c","brokerName":"b","brokerId":1,"epochList":[],"maxOffset":0}`},
		{"replicas", controller.Answer{Result: controller.BrokerReplicasInfo{ReplicasInfoTable: map[string]controller.ReplicasInfo{}}}, 0, "",
			map[string]string{}, `{"replicasInfoTable":{}}`},
		{"done", controller.Answer{}, 0, "", map[string]string{}, ""},
	} {
		req := remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil)
		req.Opaque = 42
		resp := Encode(req, tc.a)
		if resp.Code != tc.code || resp.Remark != tc.remark || !resp.IsResponse() || resp.Opaque != 42 {
			t.Errorf("%s: code %d remark %q response %v opaque %d", tc.name, resp.Code, resp.Remark, resp.IsResponse(), resp.Opaque)
		}
		if !maps.Equal(resp.ExtFields, tc.fields) {
			t.Errorf("%s: fields %v, want %v", tc.name, resp.ExtFields, tc.fields)
		}
		if string(resp.Body) != tc.body {
			t.Errorf("%s: body %s, want %s", tc.name, resp.Body, tc.body)
		}
	}
}

// TestRoleAnswerRoundTrip: what Encode writes for a role, ParseRoleAnswer
// (the member's side) reads back.
func TestRoleAnswerRoundTrip(t *testing.T) {
	g := controller.Group{Cluster: "c", BrokerName: "b", MasterID: 1, MasterEpoch: 4, SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 5,
		Replicas: map[int64]controller.Replica{1: {Addr: "h:1", HAAddr: "h:2"}}}
	resp := Encode(remoting.NewRequest(remoting.BrokerHeartbeat, nil, nil), controller.Answer{Result: controller.Role{Group: g, ReplicaID: 2}})
	a, err := ParseRoleAnswer(resp)
	want := controller.RoleAnswer{ReplicaID: 2, MasterID: 1, MasterEpoch: 4, SyncStateSetEpoch: 5, MasterAddr: "h:1", MasterHAAddr: "h:2", SyncStateSet: []int64{1, 2}}
	if err != nil || a.ReplicaID != want.ReplicaID || a.MasterID != want.MasterID || a.MasterEpoch != want.MasterEpoch ||
		a.SyncStateSetEpoch != want.SyncStateSetEpoch || a.MasterAddr != want.MasterAddr || a.MasterHAAddr != want.MasterHAAddr || len(a.SyncStateSet) != 2 {
		t.Fatalf("got %+v %v, want %+v", a, err, want)
	}
}
