package namesrv

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// DataVersion is RocketMQ's DataVersion: it changes whenever a broker's topic
// configuration changes. JSON {"stateVersion":0,"timestamp":ms,"counter":n}.
type DataVersion struct {
	// StateVersion is the broker's state machine version (0 without
	// controller mode).
	StateVersion int64 `json:"stateVersion"`
	// Timestamp is when the broker created or last bumped the version, in ms.
	Timestamp int64 `json:"timestamp"`
	// Counter counts the changes since Timestamp.
	Counter int64 `json:"counter"`
}

// QueueData is one broker's queues of a topic in a route. Field names (and
// their alphabetical order) are the Java name server's.
type QueueData struct {
	// BrokerName names the broker (master and its slaves).
	BrokerName string `json:"brokerName"`
	// Perm is the topic's permission bits on that broker (meta.Perm*).
	Perm int32 `json:"perm"`
	// ReadQueueNums is the number of readable queues.
	ReadQueueNums int32 `json:"readQueueNums"`
	// TopicSysFlag is the topic's system flag.
	TopicSysFlag int32 `json:"topicSysFlag"`
	// WriteQueueNums is the number of writable queues.
	WriteQueueNums int32 `json:"writeQueueNums"`
}

// BrokerData is one broker name with the addresses of its live members
// (id 0 = master, >0 = slaves).
type BrokerData struct {
	// BrokerAddrs maps broker id to "host:port"; encoded with quoted keys.
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
	// BrokerName names the broker.
	BrokerName string `json:"brokerName"`
	// Cluster is the broker's cluster name.
	Cluster string `json:"cluster"`
	// EnableActingMaster is RocketMQ 5's slave-acting-master flag; always
	// false in wheelmq.
	EnableActingMaster bool `json:"enableActingMaster"`
	// GRPCEndpoints maps broker id to the member's RocketMQ 5 gRPC
	// endpoint "host:port", for the members that registered one
	// (wheelmq's own field; absent when none did). RocketMQ's clients
	// ignore it; wheelmq brokers read it to answer gRPC routes that span
	// the cluster.
	GRPCEndpoints map[int64]string `json:"grpcEndpoints,omitempty"`
}

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC response body.
type TopicRouteData struct {
	// BrokerDatas lists the brokers serving the topic, sorted by name.
	BrokerDatas []BrokerData `json:"brokerDatas"`
	// FilterServerTable is always empty (filter servers are gone in 5.x).
	FilterServerTable map[string][]string `json:"filterServerTable"`
	// OrderTopicConf is "brokerName:num;..." for global order topics: the
	// topic's ORDER_TOPIC_CONFIG value when order messages are enabled
	// (Registry.SetOrderMessageEnable), else absent.
	OrderTopicConf string `json:"orderTopicConf,omitempty"`
	// QueueDatas lists the topic's queues per broker, sorted by brokerName.
	QueueDatas []QueueData `json:"queueDatas"`
}

// ClusterInfo is the GET_BROKER_CLUSTER_INFO response body.
type ClusterInfo struct {
	// BrokerAddrTable maps broker name to its BrokerData.
	BrokerAddrTable map[string]BrokerData `json:"brokerAddrTable"`
	// ClusterAddrTable maps cluster name to its sorted broker names.
	ClusterAddrTable map[string][]string `json:"clusterAddrTable"`
}

// TopicList is the GET_ALL_TOPIC_LIST_FROM_NAMESERVER response body.
type TopicList struct {
	// BrokerAddr names a broker to ask next (GET_SYSTEM_TOPIC_LIST_FROM_NS
	// only: the client asks it for its system topics); omitted when empty.
	BrokerAddr string `json:"brokerAddr,omitempty"`
	// TopicList holds the topic names, sorted.
	TopicList []string `json:"topicList"`
}

// registerBrokerBody is RegisterBrokerBody in its uncompressed JSON form.
type registerBrokerBody struct {
	TopicConfigSerializeWrapper topicConfigWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string           `json:"filterServerList"`
}

// topicConfigWrapper is TopicConfigAndMappingSerializeWrapper, reduced to
// the parts the name server uses (mapping info is carried, not read).
type topicConfigWrapper struct {
	TopicConfigTable         map[string]meta.TopicConfig `json:"topicConfigTable"`
	DataVersion              DataVersion                 `json:"dataVersion"`
	TopicQueueMappingInfoMap map[string]json.RawMessage  `json:"topicQueueMappingInfoMap"`
}

// marshalCompact encodes v as JSON without any insignificant white space and
// without HTML escaping (Java does not escape '<', '>' or '&').
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("namesrv encode %T: %w", v, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// CompactJSON encodes v as the name server's bodies are encoded (routes,
// cluster info, topic lists, KV tables): JSON without insignificant white
// space and without HTML escaping.
func CompactJSON(v any) ([]byte, error) { return marshalCompact(v) }
