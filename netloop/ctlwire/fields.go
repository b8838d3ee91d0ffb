package ctlwire

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Header field names, as RocketMQ's controller headers name them
// (BrokerHeartbeatRequestHeader, AlterSyncStateSetRequestHeader, ...).
// FieldHAServerAddr, FieldMasterHAAddress and FieldLeaderAddress are
// wheelmq's additions.
const (
	FieldClusterName          = "clusterName"
	FieldBrokerName           = "brokerName"
	FieldBrokerAddr           = "brokerAddr"
	FieldBrokerAddress        = "brokerAddress"
	FieldBrokerID             = "brokerId"
	FieldEpoch                = "epoch"
	FieldMaxOffset            = "maxOffset"
	FieldConfirmOffset        = "confirmOffset"
	FieldHAServerAddr         = "haServerAddr"
	FieldMasterBrokerID       = "masterBrokerId"
	FieldMasterAddress        = "masterAddress"
	FieldMasterHAAddress      = "masterHaAddress"
	FieldMasterEpoch          = "masterEpoch"
	FieldSyncStateSetEpoch    = "syncStateSetEpoch"
	FieldNewSyncStateSetEpoch = "newSyncStateSetEpoch"
	FieldNextBrokerID         = "nextBrokerId"
	FieldAppliedBrokerID      = "appliedBrokerId"
	FieldRegisterCheckCode    = "registerCheckCode"
	FieldDesignateElect       = "designateElect"
	FieldLeaderAddress        = "controllerLeaderAddress"
	FieldLeaderID             = "controllerLeaderId"
	FieldIsLeader             = "isLeader"
	FieldGroup                = "group"
	FieldPeers                = "peers"
)

// HeartbeatFields returns the BROKER_HEARTBEAT header fields of h.
func HeartbeatFields(h controller.Heartbeat) map[string]string {
	return map[string]string{
		FieldClusterName: h.Cluster, FieldBrokerName: h.BrokerName, FieldBrokerAddr: h.BrokerAddr,
		FieldHAServerAddr: h.HAAddr, FieldBrokerID: strconv.FormatInt(h.ReplicaID, 10),
		FieldEpoch: strconv.FormatInt(h.Epoch, 10), FieldMaxOffset: strconv.FormatInt(h.MaxOffset, 10),
		FieldConfirmOffset: strconv.FormatInt(h.Confirmed, 10),
	}
}

// ParseHeartbeat decodes a BROKER_HEARTBEAT header.
func ParseHeartbeat(cmd *remoting.Command) (controller.Heartbeat, error) {
	h := controller.Heartbeat{
		Cluster: cmd.Field(FieldClusterName), BrokerName: cmd.Field(FieldBrokerName),
		BrokerAddr: cmd.Field(FieldBrokerAddr), HAAddr: cmd.Field(FieldHAServerAddr),
	}
	var err error
	if h.ReplicaID, err = optInt(cmd, FieldBrokerID); err != nil {
		return h, err
	}
	if h.Epoch, err = optInt(cmd, FieldEpoch); err != nil {
		return h, err
	}
	if h.MaxOffset, err = optInt(cmd, FieldMaxOffset); err != nil {
		return h, err
	}
	if h.Confirmed, err = optInt(cmd, FieldConfirmOffset); err != nil {
		return h, err
	}
	if h.BrokerName == "" || h.BrokerAddr == "" {
		return h, fmt.Errorf("heartbeat: brokerName and brokerAddr are required")
	}
	if h.ReplicaID < 0 {
		h.ReplicaID = 0
	}
	return h, nil
}

// ParseRoleAnswer decodes a heartbeat, register or alter answer.
func ParseRoleAnswer(resp *remoting.Command) (controller.RoleAnswer, error) {
	var a controller.RoleAnswer
	var err error
	for _, f := range []struct {
		name string
		dst  *int64
	}{{FieldBrokerID, &a.ReplicaID}, {FieldMasterBrokerID, &a.MasterID}, {FieldMasterEpoch, &a.MasterEpoch}, {FieldSyncStateSetEpoch, &a.SyncStateSetEpoch}} {
		if *f.dst, err = optInt(resp, f.name); err != nil {
			return a, err
		}
	}
	a.MasterAddr, a.MasterHAAddr = resp.Field(FieldMasterAddress), resp.Field(FieldMasterHAAddress)
	if len(resp.Body) > 0 {
		b, err := controller.DecodeSyncStateSet(resp.Body)
		if err != nil {
			return a, err
		}
		a.SyncStateSet = b.SyncStateSet
	}
	return a, nil
}

// optInt reads an integer header field; absent or empty is 0. Like
// fastjson it accepts a quoted or bare decimal, with surrounding spaces.
func optInt(cmd *remoting.Command, name string) (int64, error) {
	s := strings.TrimSpace(cmd.Field(name))
	if s == "" || s == "null" {
		return 0, nil
	}
	v, err := strconv.ParseInt(strings.Trim(s, `"`), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("header field %s: %w", name, err)
	}
	return v, nil
}
