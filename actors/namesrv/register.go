package namesrv

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// BrokerInfo is a broker's identity as it registers with name servers.
type BrokerInfo struct {
	// Cluster is the cluster name (RocketMQ's default is "DefaultCluster").
	Cluster string
	// BrokerName names the broker; a master and its slaves share it.
	BrokerName string
	// BrokerAddr is the "host:port" clients connect to.
	BrokerAddr string
	// HAServerAddr is the replication address; may be empty.
	HAServerAddr string
	// BrokerID is 0 for the master, >0 for slaves.
	BrokerID int64
	// HeartbeatTimeout is how long the name server keeps the broker without
	// a new registration; 0 means the name server's default (120 s).
	HeartbeatTimeout time.Duration
	// GRPCEndpoint is the broker's RocketMQ 5 gRPC endpoint ("host:port";
	// empty: none), sent as the header field grpcEndpoint and answered in
	// routes as BrokerData.GRPCEndpoints (docs/namesrv.md).
	GRPCEndpoint string
}

// NewRegisterRequest builds the REGISTER_BROKER request a broker sends every
// registration period: the header fields, an uncompressed JSON
// RegisterBrokerBody carrying topics and dv, and bodyCrc32 (RocketMQ's masked
// CRC-32 of the body). It fails when info or a topic config is invalid.
func NewRegisterRequest(info BrokerInfo, topics map[string]meta.TopicConfig, dv DataVersion) (*remoting.Command, error) {
	if err := validateBrokerInfo(info); err != nil {
		return nil, fmt.Errorf("namesrv register request: %w", err)
	}
	table, err := copyTopics(topics)
	if err != nil {
		return nil, fmt.Errorf("namesrv register request: %w", err)
	}
	body, err := marshalCompact(registerBrokerBody{
		TopicConfigSerializeWrapper: topicConfigWrapper{
			TopicConfigTable:         table,
			DataVersion:              dv,
			TopicQueueMappingInfoMap: map[string]json.RawMessage{},
		},
		FilterServerList: []string{},
	})
	if err != nil {
		return nil, fmt.Errorf("namesrv register request: %w", err)
	}
	ext := brokerFields(info)
	if info.HAServerAddr != "" {
		ext[fieldHAServerAddr] = info.HAServerAddr
	}
	if info.GRPCEndpoint != "" {
		ext[fieldGRPCEndpoint] = info.GRPCEndpoint
	}
	if ms := info.HeartbeatTimeout.Milliseconds(); ms > 0 {
		ext[fieldHeartbeatTimeoutMs] = strconv.FormatInt(ms, 10)
	}
	ext[fieldEnableActingMaster] = "false"
	ext[fieldCompressed] = "false"
	ext[fieldBodyCRC32] = strconv.FormatInt(bodyCRC32(body), 10)
	return remoting.NewRequest(remoting.RegisterBroker, ext, body), nil
}

// NewUnregisterRequest builds the UNREGISTER_BROKER request a broker sends
// when it shuts down.
func NewUnregisterRequest(info BrokerInfo) *remoting.Command {
	return remoting.NewRequest(remoting.UnregisterBroker, brokerFields(info), nil)
}

// ParseRouteData decodes a GET_ROUTEINFO_BY_TOPIC response body in standard
// JSON (quoted broker ids), as this name server and Java name servers answer
// requests of version >= V4_9_4.
func ParseRouteData(body []byte) (*TopicRouteData, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty route body", ErrBadBody)
	}
	var rd TopicRouteData
	if err := json.Unmarshal(body, &rd); err != nil {
		return nil, fmt.Errorf("%w: route data: %v", ErrBadBody, err)
	}
	return &rd, nil
}

// brokerFields returns the identity header fields shared by both requests.
func brokerFields(info BrokerInfo) map[string]string {
	return map[string]string{
		fieldClusterName: info.Cluster,
		fieldBrokerName:  info.BrokerName,
		fieldBrokerAddr:  info.BrokerAddr,
		fieldBrokerID:    strconv.FormatInt(info.BrokerID, 10),
	}
}
