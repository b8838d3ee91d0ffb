package controller

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/lenient"
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

// SyncStateSetBody is RocketMQ's SyncStateSet body:
// {"syncStateSet":[1,2],"syncStateSetEpoch":3}.
type SyncStateSetBody struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int64   `json:"syncStateSetEpoch"`
}

// syncStateSetWire decodes a SyncStateSet body leniently (numbers quoted
// or not, as fastjson reads them).
type syncStateSetWire struct {
	SyncStateSet      []lenient.Int64 `json:"syncStateSet"`
	SyncStateSetEpoch lenient.Int64   `json:"syncStateSetEpoch"`
}

// DecodeSyncStateSet decodes a SyncStateSet body.
func DecodeSyncStateSet(b []byte) (SyncStateSetBody, error) {
	var w syncStateSetWire
	if err := json.Unmarshal(b, &w); err != nil {
		return SyncStateSetBody{}, fmt.Errorf("sync-state set body: %w", err)
	}
	out := SyncStateSetBody{SyncStateSetEpoch: int64(w.SyncStateSetEpoch)}
	for _, id := range w.SyncStateSet {
		out.SyncStateSet = append(out.SyncStateSet, int64(id))
	}
	return out, nil
}

// DecodeBrokerNames decodes a CONTROLLER_GET_SYNC_STATE_DATA body: a JSON
// list of broker names.
func DecodeBrokerNames(b []byte) ([]string, error) {
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	var w []lenient.String
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("broker names body: %w", err)
	}
	return lenient.Strings(w), nil
}

// ReplicaIdentity is one entry of BrokerReplicasInfo.ReplicasInfo.
type ReplicaIdentity struct {
	BrokerName    string `json:"brokerName"`
	BrokerID      int64  `json:"brokerId"`
	BrokerAddress string `json:"brokerAddress"`
	Alive         bool   `json:"alive"`
}

// ReplicasInfo is RocketMQ's BrokerReplicasInfo.ReplicasInfo.
type ReplicasInfo struct {
	MasterBrokerID    int64             `json:"masterBrokerId"`
	MasterAddress     string            `json:"masterAddress"`
	MasterEpoch       int64             `json:"masterEpoch"`
	SyncStateSetEpoch int64             `json:"syncStateSetEpoch"`
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
}

// BrokerReplicasInfo is the CONTROLLER_GET_SYNC_STATE_DATA answer body.
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// BrokerMemberGroup is the CONTROLLER_ELECT_MASTER answer body.
type BrokerMemberGroup struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// EpochEntry is one entry of EpochEntryCache.
type EpochEntry struct {
	Epoch       int64 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// EpochEntryCache is the GET_BROKER_EPOCH_CACHE answer body.
type EpochEntryCache struct {
	ClusterName string       `json:"clusterName"`
	BrokerName  string       `json:"brokerName"`
	BrokerID    int64        `json:"brokerId"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}

// Heartbeat is a decoded BROKER_HEARTBEAT (904) header.
type Heartbeat struct {
	Cluster, BrokerName, BrokerAddr, HAAddr string
	// ReplicaID is the broker's persisted replica id (brokerId), 0: none.
	ReplicaID                   int64
	Epoch, MaxOffset, Confirmed int64
}

// Fields returns the header fields of h.
func (h Heartbeat) Fields() map[string]string {
	return map[string]string{
		FieldClusterName: h.Cluster, FieldBrokerName: h.BrokerName, FieldBrokerAddr: h.BrokerAddr,
		FieldHAServerAddr: h.HAAddr, FieldBrokerID: strconv.FormatInt(h.ReplicaID, 10),
		FieldEpoch: strconv.FormatInt(h.Epoch, 10), FieldMaxOffset: strconv.FormatInt(h.MaxOffset, 10),
		FieldConfirmOffset: strconv.FormatInt(h.Confirmed, 10),
	}
}

// ParseHeartbeat decodes a BROKER_HEARTBEAT header.
func ParseHeartbeat(cmd *remoting.Command) (Heartbeat, error) {
	h := Heartbeat{
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

// RoleAnswer is what a heartbeat (and register) answer tells a broker.
type RoleAnswer struct {
	ReplicaID, MasterID, MasterEpoch, SyncStateSetEpoch int64
	MasterAddr, MasterHAAddr                            string
	SyncStateSet                                        []int64
}

// roleResponse builds the answer to req for replica id in g.
func roleResponse(req *remoting.Command, g Group, id int64) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	m := g.Master()
	resp.ExtFields = map[string]string{
		FieldClusterName: g.Cluster, FieldBrokerName: g.BrokerName,
		FieldBrokerID: strconv.FormatInt(id, 10), FieldMasterBrokerID: strconv.FormatInt(g.MasterID, 10),
		FieldMasterAddress: m.Addr, FieldMasterHAAddress: m.HAAddr,
		FieldMasterEpoch: strconv.FormatInt(g.MasterEpoch, 10), FieldSyncStateSetEpoch: strconv.FormatInt(g.SyncStateSetEpoch, 10),
	}
	resp.Body, _ = json.Marshal(SyncStateSetBody{SyncStateSet: nonNil(g.SyncStateSet), SyncStateSetEpoch: g.SyncStateSetEpoch})
	return resp
}

// ParseRoleAnswer decodes a heartbeat or register answer.
func ParseRoleAnswer(resp *remoting.Command) (RoleAnswer, error) {
	var a RoleAnswer
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
		b, err := DecodeSyncStateSet(resp.Body)
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

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// maxEnd is EpochEntry's open end (Java Long.MAX_VALUE).
const maxEnd = math.MaxInt64
