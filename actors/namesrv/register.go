package namesrv

import (
	"encoding/json"
	"fmt"
	"time"

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

// EncodeRegisterBody returns the body of the REGISTER_BROKER request a
// broker sends every registration period: an uncompressed JSON
// RegisterBrokerBody carrying topics and dv (a codec adds the header
// fields and BodyCRC32 of it). It fails when info or a topic config is
// invalid.
func EncodeRegisterBody(info BrokerInfo, topics map[string]meta.TopicConfig, dv DataVersion) ([]byte, error) {
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
	return body, nil
}

// BodyCRC32 is RocketMQ's UtilAll.crc32 of a body (CRC-32/IEEE masked to
// 31 bits), the header bodyCrc32 of a REGISTER_BROKER.
func BodyCRC32(body []byte) int64 { return bodyCRC32(body) }

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
