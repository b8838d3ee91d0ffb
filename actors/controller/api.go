package controller

// The controller's API: one typed request per request code, one Answer
// whose Code is the controller's status table (the RocketMQ response codes
// of actors/wirecode: Success, the Code* constants of fsm.go, SYSTEM_BUSY,
// SYSTEM_ERROR, INVALID_PARAMETER, NO_PERMISSION). A codec decodes a
// request, calls Handle and encodes the Answer (netloop/ctlwire for the
// remoting port: header fields, bodies, refusals by request code).

// Request is one controller request: one of the *Request types below, or
// Malformed.
type Request interface {
	// leaderOnly reports whether only the raft leader serves it (a
	// follower answers CodeNotLeader, naming the leader).
	leaderOnly() bool
}

// HeartbeatRequest is BROKER_HEARTBEAT (904) and CONTROLLER_REGISTER_BROKER
// (1003): the broker's lease is renewed (a broker the group does not know,
// or whose addresses changed, is registered through raft first) and the
// answer is its Role.
type HeartbeatRequest struct{ Heartbeat }

// NextBrokerIDRequest is CONTROLLER_GET_NEXT_BROKER_ID (1012); the answer
// is a NextBrokerID.
type NextBrokerIDRequest struct{ Cluster, BrokerName string }

// ApplyBrokerIDRequest is CONTROLLER_APPLY_BROKER_ID (1013): the broker at
// Addr takes replica id ID (>= 1); the answer is a BrokerIDApplied.
type ApplyBrokerIDRequest struct {
	Cluster, BrokerName, Addr string
	ID                        int64
}

// AlterRequest is CONTROLLER_ALTER_SYNC_STATE_SET (1001): master MasterID
// of MasterEpoch proposes Set; the answer is a Role with Altered set.
// Cluster "" finds the group by BrokerName alone.
type AlterRequest struct {
	Cluster, BrokerName   string
	MasterID, MasterEpoch int64
	Set                   SyncStateSetBody
}

// ReplicaInfoRequest is CONTROLLER_GET_REPLICA_INFO (1004); the answer is a
// Role of replica id 0. Cluster "" finds the group by BrokerName alone.
type ReplicaInfoRequest struct{ Cluster, BrokerName string }

// SyncStateDataRequest is CONTROLLER_GET_SYNC_STATE_DATA (1006) of the
// groups named (none: every group); the answer is a BrokerReplicasInfo.
type SyncStateDataRequest struct{ BrokerNames []string }

// EpochCacheRequest is GET_BROKER_EPOCH_CACHE (1007) from the controller's
// view; the answer is an EpochEntryCache.
type EpochCacheRequest struct{ Cluster, BrokerName string }

// ElectRequest is CONTROLLER_ELECT_MASTER (1002): BrokerID > 0 names the
// new master, otherwise the usual election runs; the answer is an Elected.
type ElectRequest struct {
	Cluster, BrokerName string
	BrokerID            int64
}

// MetadataRequest is CONTROLLER_GET_METADATA_INFO (1005), served by every
// controller; the answer is a Metadata.
type MetadataRequest struct{}

// GetConfigRequest is GET_CONTROLLER_CONFIG (1010), served by every
// controller; the answer is a ConfigView.
type GetConfigRequest struct{}

// UpdateConfigRequest is UPDATE_CONTROLLER_CONFIG (1009), served by every
// controller for itself: Values (trimmed) are applied whole or not at all
// (runtimeconfig.go).
type UpdateConfigRequest struct{ Values map[string]string }

// Malformed is a request its codec could not decode: it is answered Code
// and Remark where the request's own checks would refuse it (on the
// leader only when LeaderOnly, so that a follower still names the leader),
// and changes nothing.
type Malformed struct {
	LeaderOnly bool
	Code       int32
	Remark     string
}

func (HeartbeatRequest) leaderOnly() bool     { return true }
func (NextBrokerIDRequest) leaderOnly() bool  { return true }
func (ApplyBrokerIDRequest) leaderOnly() bool { return true }
func (AlterRequest) leaderOnly() bool         { return true }
func (ReplicaInfoRequest) leaderOnly() bool   { return true }
func (SyncStateDataRequest) leaderOnly() bool { return true }
func (EpochCacheRequest) leaderOnly() bool    { return true }
func (ElectRequest) leaderOnly() bool         { return true }
func (MetadataRequest) leaderOnly() bool      { return false }
func (GetConfigRequest) leaderOnly() bool     { return false }
func (UpdateConfigRequest) leaderOnly() bool  { return false }
func (m Malformed) leaderOnly() bool          { return m.LeaderOnly }

// Answer is the controller's answer to one request: Code 0 (success) or a
// refusal code with Remark, and Result, what the request asked for (nil
// for none: a refusal, or an update that only says it was done).
type Answer struct {
	Code   int32
	Remark string
	// Result is one of Role, NotLeader, NextBrokerID, BrokerIDApplied,
	// Elected, BrokerReplicasInfo, EpochEntryCache, Metadata, ConfigView.
	Result any
}

// Role is a group's role state as told to replica ReplicaID (a heartbeat,
// a register, a replica-info or an alter answer). Altered marks an alter
// answer (it names the new sync-state set epoch).
type Role struct {
	Group     Group
	ReplicaID int64
	Altered   bool
}

// NotLeader is the result of a CodeNotLeader answer from a follower: the
// leader's remoting address ("" unknown, an election in progress).
type NotLeader struct{ LeaderAddr string }

// NextBrokerID is the replica id the next broker of a group gets.
type NextBrokerID struct {
	Cluster, BrokerName string
	Next                int64
}

// BrokerIDApplied says a broker's replica id was applied to its group.
type BrokerIDApplied struct{ Cluster, BrokerName string }

// Elected is a group after an election (CONTROLLER_ELECT_MASTER).
type Elected struct{ Group Group }

// Metadata is the controller group's view (CONTROLLER_GET_METADATA_INFO):
// its name, the raft leader's id and remoting address, whether this node
// leads, and the raft peers.
type Metadata struct {
	Group, LeaderID, LeaderAddr string
	IsLeader                    bool
	Peers                       []string
}

// ConfigView is the controller's configuration in force, by key
// (GET_CONTROLLER_CONFIG).
type ConfigView map[string]string

// refuse is a refusal answer.
func refuse(code int32, remark string) Answer { return Answer{Code: code, Remark: remark} }

// served is a success answer carrying result.
func served(result any) Answer { return Answer{Result: result} }
