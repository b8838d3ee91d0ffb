package meta

import "maps"

// Permission bits of a topic or broker (RocketMQ PermName).
const (
	// PermPriority marks a priority topic.
	PermPriority int32 = 1 << 3
	// PermRead allows consumers to read.
	PermRead int32 = 1 << 2
	// PermWrite allows producers to write.
	PermWrite int32 = 1 << 1
	// PermInherit lets new topics be created from this one (TBW102).
	PermInherit int32 = 1 << 0
)

// TopicConfig is one topic's configuration, with RocketMQ's JSON field names
// (as in topics.json and in REGISTER_BROKER bodies).
type TopicConfig struct {
	// TopicName is the topic.
	TopicName string `json:"topicName"`
	// ReadQueueNums is the number of queues consumers read.
	ReadQueueNums int32 `json:"readQueueNums"`
	// WriteQueueNums is the number of queues producers write.
	WriteQueueNums int32 `json:"writeQueueNums"`
	// Perm is a combination of the Perm* bits.
	Perm int32 `json:"perm"`
	// TopicFilterType is SINGLE_TAG or MULTI_TAG.
	TopicFilterType string `json:"topicFilterType"`
	// TopicSysFlag carries RocketMQ's topic system flags.
	TopicSysFlag int32 `json:"topicSysFlag"`
	// Order marks an ordered topic.
	Order bool `json:"order"`
	// Attributes are the topic's attributes (message.type, queue.type,
	// cleanup.policy, reserve.time; see topicattrs.go), plain keys; nil
	// when it has none (then absent from the JSON, which RocketMQ reads as
	// an empty map).
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Equal reports whether c and o are the same configuration (attributes nil
// and empty are the same).
func (c TopicConfig) Equal(o TopicConfig) bool {
	return c.TopicName == o.TopicName && c.ReadQueueNums == o.ReadQueueNums && c.WriteQueueNums == o.WriteQueueNums &&
		c.Perm == o.Perm && c.TopicFilterType == o.TopicFilterType && c.TopicSysFlag == o.TopicSysFlag &&
		c.Order == o.Order && maps.Equal(c.Attributes, o.Attributes)
}
