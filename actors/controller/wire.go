package controller

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/wheelmq/wheelmq/storage/lenient"
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

// Heartbeat is a broker's heartbeat (BROKER_HEARTBEAT, 904; its header
// fields are netloop/ctlwire's).
type Heartbeat struct {
	Cluster, BrokerName, BrokerAddr, HAAddr string
	// ReplicaID is the broker's persisted replica id (brokerId), 0: none.
	ReplicaID                   int64
	Epoch, MaxOffset, Confirmed int64
}

// RoleAnswer is what a heartbeat (and register) answer tells a broker.
type RoleAnswer struct {
	ReplicaID, MasterID, MasterEpoch, SyncStateSetEpoch int64
	MasterAddr, MasterHAAddr                            string
	SyncStateSet                                        []int64
}

// maxEnd is EpochEntry's open end (Java Long.MAX_VALUE).
const maxEnd = math.MaxInt64
