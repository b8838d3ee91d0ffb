package ctlwire

import (
	"fmt"
	"strings"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/javaprops"
)

// maxConfigBody bounds an UPDATE_CONTROLLER_CONFIG body (a few keys).
const maxConfigBody = 64 << 10

// Decode turns a controller request into the controller's typed request
// (false: code is not a controller code). A request that does not decode
// becomes a controller.Malformed carrying its refusal, so that the
// controller refuses it where it always did (after the leader check for
// the leader's codes).
func Decode(cmd *remoting.Command) (controller.Request, bool) {
	cluster, name := cmd.Field(FieldClusterName), cmd.Field(FieldBrokerName)
	switch cmd.Code {
	case remoting.ControllerGetMetadataInfo:
		return controller.MetadataRequest{}, true
	case remoting.GetControllerConfig:
		return controller.GetConfigRequest{}, true
	case remoting.UpdateControllerConfig:
		return decodeConfigUpdate(cmd.Body), true
	case remoting.BrokerHeartbeat:
		return decodeHeartbeat(cmd), true
	case remoting.ControllerRegisterBroker:
		_, err := optInt(cmd, FieldBrokerID)
		addr := cmd.Field(FieldBrokerAddress)
		if err != nil || addr == "" || name == "" {
			return invalid("controller: register needs brokerName, brokerAddress and a numeric brokerId"), true
		}
		cmd.SetField(FieldBrokerAddr, addr) // then served as a heartbeat from addr
		return decodeHeartbeat(cmd), true
	case remoting.ControllerApplyBrokerID:
		id, err := optInt(cmd, FieldAppliedBrokerID)
		addr, _, _ := strings.Cut(cmd.Field(FieldRegisterCheckCode), ";") // "brokerAddr;timestamp", as RocketMQ's broker sends it
		if err != nil || id <= 0 || addr == "" {
			return invalid("controller: apply broker id needs appliedBrokerId >= 1 and registerCheckCode addr;time"), true
		}
		return controller.ApplyBrokerIDRequest{Cluster: cluster, BrokerName: name, Addr: addr, ID: id}, true
	case remoting.ControllerGetNextBrokerID:
		return controller.NextBrokerIDRequest{Cluster: cluster, BrokerName: name}, true
	case remoting.ControllerAlterSyncStateSet:
		mid, err1 := optInt(cmd, FieldMasterBrokerID)
		mep, err2 := optInt(cmd, FieldMasterEpoch)
		body, err3 := controller.DecodeSyncStateSet(cmd.Body)
		if err1 != nil || err2 != nil || err3 != nil {
			return invalid("controller: alter sync-state set: bad header or body"), true
		}
		return controller.AlterRequest{Cluster: cluster, BrokerName: name, MasterID: mid, MasterEpoch: mep, Set: body}, true
	case remoting.ControllerGetReplicaInfo:
		return controller.ReplicaInfoRequest{Cluster: cluster, BrokerName: name}, true
	case remoting.ControllerGetSyncStateData:
		names, err := controller.DecodeBrokerNames(cmd.Body)
		if err != nil {
			return invalid("controller: " + err.Error()), true
		}
		return controller.SyncStateDataRequest{BrokerNames: names}, true
	case remoting.GetBrokerEpochCache:
		return controller.EpochCacheRequest{Cluster: cluster, BrokerName: name}, true
	case remoting.ControllerElectMaster:
		id, _ := optInt(cmd, FieldBrokerID) // a bad id is no designation
		return controller.ElectRequest{Cluster: cluster, BrokerName: name, BrokerID: id}, true
	}
	return nil, false
}

// invalid is a leader's code that did not decode: CONTROLLER_INVALID_REQUEST.
func invalid(remark string) controller.Malformed {
	return controller.Malformed{LeaderOnly: true, Code: controller.CodeInvalidRequest, Remark: remark}
}

// decodeHeartbeat decodes a heartbeat (or a register turned into one).
func decodeHeartbeat(cmd *remoting.Command) controller.Request {
	h, err := ParseHeartbeat(cmd)
	if err != nil {
		return invalid("controller: " + err.Error())
	}
	return controller.HeartbeatRequest{Heartbeat: h}
}

// decodeConfigUpdate decodes UPDATE_CONTROLLER_CONFIG's properties text;
// each value trimmed, as mqadmin and properties2Object trim.
func decodeConfigUpdate(body []byte) controller.Request {
	if len(body) > maxConfigBody {
		return controller.Malformed{Code: remoting.InvalidParameter,
			Remark: fmt.Sprintf("controller: nothing changed: the body holds %d bytes, more than %d", len(body), maxConfigBody)}
	}
	entries, err := javaprops.Parse(body)
	if err != nil {
		return controller.Malformed{Code: remoting.InvalidParameter, Remark: "controller: nothing changed: the body is not Java properties text: " + err.Error()}
	}
	values := make(map[string]string, len(entries))
	for _, e := range entries {
		values[e.Key] = strings.TrimSpace(e.Value)
	}
	return controller.UpdateConfigRequest{Values: values}
}
