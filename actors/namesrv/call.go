package namesrv

// The name server's calls: one Go type per request kind, decoded by a
// codec (the remoting one is netloop/nsrvcodec) and served by
// Registry.Serve (the actor: Request). Send them as values.

import "github.com/wheelmq/wheelmq/actors/wirecode"

// Call is one name-server request, typed: one of RegisterBroker,
// UnregisterBroker, GetRoute, GetClusterInfo, GetAllTopics, DeleteTopic,
// PutKV, GetKV, DeleteKV, GetKVList, GetSystemTopics,
// GetTopicsByCluster, WipeWritePerm, AddWritePerm and GetConfig.
type Call interface {
	// Code is the RocketMQ request code the call is known by (for logs).
	Code() int32
}

// RegisterBroker is REGISTER_BROKER (103): a broker's periodic
// registration with its topic table. Body is RegisterBrokerBody as sent
// (JSON, or the zlib layout when Compressed; see the package doc); the
// registry checks BodyCRC32 (0: not sent) and decodes it.
type RegisterBroker struct {
	// Info is the broker's identity from the header.
	Info BrokerInfo
	// Compressed says the body is the compressed layout.
	Compressed bool
	// BodyCRC32 is the header's bodyCrc32 (0: none).
	BodyCRC32 int64
	// Body is the request body.
	Body []byte
}

// UnregisterBroker is UNREGISTER_BROKER (104): the broker Key at Addr
// leaves the routes.
type UnregisterBroker struct {
	// Key names the broker.
	Key BrokerKey
	// Addr is the broker's address; an entry with another address stays.
	Addr string
}

// GetRoute is GET_ROUTEINFO_BY_TOPIC (105).
type GetRoute struct {
	// Topic is the topic whose route is asked for.
	Topic string
}

// GetClusterInfo is GET_BROKER_CLUSTER_INFO (106).
type GetClusterInfo struct{}

// GetAllTopics is GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
type GetAllTopics struct{}

// DeleteTopic is DELETE_TOPIC_IN_NAMESRV (216).
type DeleteTopic struct {
	// Topic is the topic to remove from the routes.
	Topic string
	// Cluster limits the removal to one cluster ("": every cluster).
	Cluster string
}

// PutKV is PUT_KV_CONFIG (100). Fields may be empty.
type PutKV struct {
	// Namespace, Key and Value are the item to store.
	Namespace, Key, Value string
}

// GetKV is GET_KV_CONFIG (101).
type GetKV struct {
	// Namespace and Key name the item.
	Namespace, Key string
}

// DeleteKV is DELETE_KV_CONFIG (102).
type DeleteKV struct {
	// Namespace and Key name the item.
	Namespace, Key string
}

// GetKVList is GET_KVLIST_BY_NAMESPACE (219).
type GetKVList struct {
	// Namespace is the namespace to list.
	Namespace string
}

// GetSystemTopics is GET_SYSTEM_TOPIC_LIST_FROM_NS (304).
type GetSystemTopics struct{}

// GetTopicsByCluster is GET_TOPICS_BY_CLUSTER (224).
type GetTopicsByCluster struct {
	// Cluster is the cluster whose topics are asked for (may be empty).
	Cluster string
}

// WipeWritePerm is WIPE_WRITE_PERM_OF_BROKER (205).
type WipeWritePerm struct {
	// BrokerName is the broker whose routes lose the write permission.
	BrokerName string
}

// AddWritePerm is ADD_WRITE_PERM_OF_BROKER (327).
type AddWritePerm struct {
	// BrokerName is the broker whose wipe is lifted.
	BrokerName string
}

// GetConfig is GET_NAMESRV_CONFIG (319), answered by the actor from
// Options.Settings.
type GetConfig struct{}

// Code implements Call.
func (RegisterBroker) Code() int32 { return wirecode.RegisterBroker }

// Code implements Call.
func (UnregisterBroker) Code() int32 { return wirecode.UnregisterBroker }

// Code implements Call.
func (GetRoute) Code() int32 { return wirecode.GetRouteInfoByTopic }

// Code implements Call.
func (GetClusterInfo) Code() int32 { return wirecode.GetBrokerClusterInfo }

// Code implements Call.
func (GetAllTopics) Code() int32 { return wirecode.GetAllTopicListFromNameserver }

// Code implements Call.
func (DeleteTopic) Code() int32 { return wirecode.DeleteTopicInNamesrv }

// Code implements Call.
func (PutKV) Code() int32 { return wirecode.PutKVConfig }

// Code implements Call.
func (GetKV) Code() int32 { return wirecode.GetKVConfig }

// Code implements Call.
func (DeleteKV) Code() int32 { return wirecode.DeleteKVConfig }

// Code implements Call.
func (GetKVList) Code() int32 { return wirecode.GetKVListByNamespace }

// Code implements Call.
func (GetSystemTopics) Code() int32 { return wirecode.GetSystemTopicListFromNS }

// Code implements Call.
func (GetTopicsByCluster) Code() int32 { return wirecode.GetTopicsByCluster }

// Code implements Call.
func (WipeWritePerm) Code() int32 { return wirecode.WipeWritePermOfBroker }

// Code implements Call.
func (AddWritePerm) Code() int32 { return wirecode.AddWritePermOfBroker }

// Code implements Call.
func (GetConfig) Code() int32 { return wirecode.GetNamesrvConfig }

// Answer is the registry's answer to a Call: its Status and remark, and on
// OK what the call asked for (the field named after it; the rest zero).
type Answer struct {
	// Status is the outcome; Remark says why it is not OK.
	Status Status
	// Remark is the refusal's text ("" on OK).
	Remark string
	// Route is GetRoute's route.
	Route *TopicRouteData
	// Cluster is GetClusterInfo's view.
	Cluster *ClusterInfo
	// Topics is the list of GetAllTopics, GetSystemTopics and
	// GetTopicsByCluster.
	Topics *TopicList
	// Table is GetKVList's namespace and RegisterBroker's
	// ORDER_TOPIC_CONFIG namespace (nil: no such namespace).
	Table map[string]string
	// Value is GetKV's value.
	Value string
	// MasterAddr and HAServerAddr are a slave's master, answered to its
	// RegisterBroker ("": none).
	MasterAddr, HAServerAddr string
	// TopicCount is how many topics WipeWritePerm or AddWritePerm touched.
	TopicCount int
	// Settings is GetConfig's settings (nil: none).
	Settings map[string]string
}

// refused is the Answer of a call refused with err (Status from the
// package's one error table, statusOf).
func refused(err error) Answer {
	return Answer{Status: statusOf(err), Remark: err.Error()}
}
