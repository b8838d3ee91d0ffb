package controller_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/controllertest"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestAdminAndBrokerCodes drives the other codes over TCP on one node:
// next/apply id, replica info, a fenced alter, the admin election and the
// epoch cache, as mqadmin and a Java broker send them.
func TestAdminAndBrokerCodes(t *testing.T) {
	cl := controllertest.Start(t, 1, 0)
	addr := cl.Nodes[cl.Leader(10*time.Second)].NetAddr
	b1, b2 := dial(t, addr), dial(t, addr)
	if r := call(t, b1, heartbeat("10.0.0.1:10911", 0)); r.Code != 0 {
		t.Fatalf("heartbeat 1: %d %s", r.Code, r.Remark)
	}
	next := call(t, b2, remoting.NewRequest(remoting.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": "b"}, nil))
	if next.Code != 0 || next.Field(ctlwire.FieldNextBrokerID) != "2" {
		t.Fatalf("next id: %d %v", next.Code, next.ExtFields)
	}
	apply := func(id, checkAddr string) *remoting.Command {
		return call(t, b2, remoting.NewRequest(remoting.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "b",
			"appliedBrokerId": id, "registerCheckCode": checkAddr + ";1700000000000"}, nil))
	}
	if r := apply("1", "10.0.0.9:10911"); r.Code != 2014 {
		t.Fatalf("apply a taken id: %d %s", r.Code, r.Remark)
	}
	if r := apply("2", "10.0.0.2:10911"); r.Code != 0 {
		t.Fatalf("apply id 2: %d %s", r.Code, r.Remark)
	}
	if r := call(t, b2, heartbeat("10.0.0.2:10911", 2)); r.Code != 0 {
		t.Fatalf("heartbeat 2: %d %s", r.Code, r.Remark)
	}
	alter := func(epoch, sssEpoch int64, set ...int64) *remoting.Command {
		body, _ := json.Marshal(controller.SyncStateSetBody{SyncStateSet: set, SyncStateSetEpoch: sssEpoch})
		return call(t, b1, remoting.NewRequest(remoting.ControllerAlterSyncStateSet, map[string]string{"brokerName": "b",
			"masterBrokerId": "1", "masterEpoch": strconv.FormatInt(epoch, 10)}, body))
	}
	if r := alter(1, 0, 1, 2); r.Code != controller.CodeFencedSyncStateSetEpoch {
		t.Fatalf("stale alter: %d %s", r.Code, r.Remark)
	}
	if r := alter(1, 1, 1, 2); r.Code != 0 || r.Field(ctlwire.FieldNewSyncStateSetEpoch) != "2" {
		t.Fatalf("alter: %d %s %v", r.Code, r.Remark, r.ExtFields)
	}
	ri := call(t, b2, remoting.NewRequest(remoting.ControllerGetReplicaInfo, map[string]string{"brokerName": "b"}, nil))
	if a, err := ctlwire.ParseRoleAnswer(ri); ri.Code != 0 || err != nil || a.MasterID != 1 || a.MasterAddr != "10.0.0.1:10911" || len(a.SyncStateSet) != 2 {
		t.Fatalf("replica info: %d %+v %v", ri.Code, a, err)
	}
	// mqadmin electMaster -b 2: designated, alive, in the set.
	el := call(t, b2, remoting.NewRequest(remoting.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b",
		"brokerId": "2", "designateElect": "true"}, nil))
	var bm controller.BrokerMemberGroup
	if el.Code != 0 || el.Field(ctlwire.FieldMasterBrokerID) != "2" || el.Field(ctlwire.FieldMasterEpoch) != "2" ||
		json.Unmarshal(el.Body, &bm) != nil || bm.BrokerAddrs[1] != "10.0.0.1:10911" {
		t.Fatalf("elect: %d %s %v %s", el.Code, el.Remark, el.ExtFields, el.Body)
	}
	// The old master's heartbeat tells it it is a replica now.
	hb := call(t, b1, heartbeat("10.0.0.1:10911", 1))
	if a, _ := ctlwire.ParseRoleAnswer(hb); a.MasterID != 2 || a.MasterEpoch != 2 {
		t.Fatalf("old master's heartbeat: %+v", a)
	}
	ec := call(t, b2, remoting.NewRequest(remoting.GetBrokerEpochCache, map[string]string{"brokerName": "b"}, nil))
	var cache controller.EpochEntryCache
	if ec.Code != 0 || json.Unmarshal(ec.Body, &cache) != nil || cache.BrokerID != 2 || len(cache.EpochList) != 1 || cache.EpochList[0].Epoch != 2 {
		t.Fatalf("epoch cache: %d %s", ec.Code, ec.Body)
	}
	if r := call(t, b2, remoting.NewRequest(remoting.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "b", "brokerId": "9"}, nil)); r.Code != controller.CodeElectMasterFailed {
		t.Fatalf("elect of an unknown replica: %d %s", r.Code, r.Remark)
	}
}
