package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// Subscription group defaults (RocketMQ SubscriptionGroupConfig).
const (
	// DefaultRetryMaxTimes is how many times a message is retried before it
	// goes to the group's dead-letter topic.
	DefaultRetryMaxTimes int32 = 16
	// DefaultRetryQueueNums is the queue count of a group's %RETRY% topic.
	DefaultRetryQueueNums int32 = 1
	// DefaultConsumeTimeoutMinute is how long a push consumer may take for
	// one message.
	DefaultConsumeTimeoutMinute int32 = 15
	// MaxGroupLen is the longest group name.
	MaxGroupLen = 255
)

// Built-in groups every broker has (RocketMQ MixAll).
const (
	GroupTools         = "TOOLS_CONSUMER"
	GroupFilterServer  = "FILTERSRV_CONSUMER"
	GroupSelfTest      = "SELF_TEST_C_GROUP"
	GroupOnsHTTPProxy  = "CID_ONS-HTTP-PROXY"
	GroupOnsAPIPull    = "CID_ONSAPI_PULL"
	GroupOnsAPIPerm    = "CID_ONSAPI_PERMISSION"
	GroupOnsAPIOwner   = "CID_ONSAPI_OWNER"
	GroupSysTransCheck = "CID_RMQ_SYS_TRANS"
)

// systemGroups are the built-in groups (RocketMQ MixAll's).
var systemGroups = map[string]bool{GroupTools: true, GroupFilterServer: true, GroupSelfTest: true, GroupOnsHTTPProxy: true,
	GroupOnsAPIPull: true, GroupOnsAPIPerm: true, GroupOnsAPIOwner: true, GroupSysTransCheck: true}

// IsSystemGroup reports whether name is one of RocketMQ's built-in groups
// or a CID_RMQ_SYS_ group (RocketMQ's system consumer groups).
func IsSystemGroup(name string) bool {
	return systemGroups[name] || strings.HasPrefix(name, "CID_RMQ_SYS_")
}

// defaultGroupRetryPolicy is GroupRetryPolicy's JSON with its defaults.
var defaultGroupRetryPolicy = json.RawMessage(`{"type":"CUSTOMIZED"}`)

// SubscriptionGroupConfig is one consumer group's configuration, with
// RocketMQ's JSON field names in the alphabetical order fastjson writes
// them (as in subscriptionGroup.json and the admin bodies). wheelmq acts on
// ConsumeEnable, ConsumeBroadcastEnable, RetryMaxTimes, RetryQueueNums and
// NotifyConsumerIDsChangedEnable; the other fields are kept and reported.
type SubscriptionGroupConfig struct {
	// Attributes are RocketMQ 5 group attributes, kept as given.
	Attributes map[string]string `json:"attributes"`
	// BrokerID is the broker id consumers are told to pull from (0).
	BrokerID int64 `json:"brokerId"`
	// ConsumeBroadcastEnable allows broadcasting consumers.
	ConsumeBroadcastEnable bool `json:"consumeBroadcastEnable"`
	// ConsumeEnable allows pulls; false makes them NO_PERMISSION.
	ConsumeEnable bool `json:"consumeEnable"`
	// ConsumeFromMinEnable lets a new group start at the queue minimum.
	ConsumeFromMinEnable bool `json:"consumeFromMinEnable"`
	// ConsumeMessageOrderly marks an orderly group.
	ConsumeMessageOrderly bool `json:"consumeMessageOrderly"`
	// ConsumeTimeoutMinute is the push consumers' per-message timeout.
	ConsumeTimeoutMinute int32 `json:"consumeTimeoutMinute"`
	// GroupName is the group.
	GroupName string `json:"groupName"`
	// GroupRetryPolicy is RocketMQ 5's retry policy object, kept as given.
	GroupRetryPolicy json.RawMessage `json:"groupRetryPolicy,omitempty"`
	// GroupSysFlag carries RocketMQ's group system flags.
	GroupSysFlag int32 `json:"groupSysFlag"`
	// NotifyConsumerIDsChangedEnable sends NOTIFY_CONSUMER_IDS_CHANGED to
	// the members when the membership changes.
	NotifyConsumerIDsChangedEnable bool `json:"notifyConsumerIdsChangedEnable"`
	// RetryMaxTimes is how many retries a message gets before the DLQ, for
	// clients that do not send maxReconsumeTimes with CONSUMER_SEND_MSG_BACK.
	RetryMaxTimes int32 `json:"retryMaxTimes"`
	// RetryQueueNums is the queue count of %RETRY%<group>; 0 drops
	// messages given back instead of retrying them.
	RetryQueueNums int32 `json:"retryQueueNums"`
	// SubscriptionDataSet is RocketMQ 5's static subscription list, kept as
	// given (omitted when absent).
	SubscriptionDataSet json.RawMessage `json:"subscriptionDataSet,omitempty"`
	// WhichBrokerWhenConsumeSlowly is the broker id suggested to slow
	// consumers (1).
	WhichBrokerWhenConsumeSlowly int64 `json:"whichBrokerWhenConsumeSlowly"`
}

// NewSubscriptionGroupConfig returns group name with RocketMQ's defaults.
func NewSubscriptionGroupConfig(name string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		Attributes: map[string]string{}, ConsumeBroadcastEnable: true, ConsumeEnable: true,
		ConsumeFromMinEnable: true, ConsumeTimeoutMinute: DefaultConsumeTimeoutMinute, GroupName: name,
		GroupRetryPolicy: defaultGroupRetryPolicy, NotifyConsumerIDsChangedEnable: true,
		RetryMaxTimes: DefaultRetryMaxTimes, RetryQueueNums: DefaultRetryQueueNums, WhichBrokerWhenConsumeSlowly: 1,
	}
}

// DefaultSubscriptionGroups returns the groups a Java broker creates at
// start-up, with their defaults.
func DefaultSubscriptionGroups() map[string]SubscriptionGroupConfig {
	m := map[string]SubscriptionGroupConfig{}
	for _, name := range []string{GroupTools, GroupFilterServer, GroupSelfTest, GroupOnsHTTPProxy, GroupOnsAPIPull,
		GroupOnsAPIPerm, GroupOnsAPIOwner, GroupSysTransCheck} {
		m[name] = NewSubscriptionGroupConfig(name)
	}
	return m
}

// ValidateGroup checks a group name as RocketMQ's TopicValidator does: not
// blank, at most 255 bytes, only characters from [%|a-zA-Z0-9_-]. Errors
// wrap ErrInvalidGroup and read like the Java broker's remarks.
func ValidateGroup(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("the specified group is blank: %w", ErrInvalidGroup)
	}
	if len(name) > MaxGroupLen {
		return fmt.Errorf("the specified group is longer than group max length %d: %w", MaxGroupLen, ErrInvalidGroup)
	}
	for i := 0; i < len(name); i++ {
		if !validTopicChar(name[i]) {
			return fmt.Errorf("the specified group[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$: %w",
				name, ErrInvalidGroup)
		}
	}
	return nil
}

// normalize fills what a decoded config may lack so that it encodes like
// Java's (attributes {}, the default retry policy).
func (c *SubscriptionGroupConfig) normalize() {
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	if len(c.GroupRetryPolicy) == 0 || string(c.GroupRetryPolicy) == "null" {
		c.GroupRetryPolicy = defaultGroupRetryPolicy
	}
	if string(c.SubscriptionDataSet) == "null" {
		c.SubscriptionDataSet = nil
	}
}

// Clone returns a deep copy of c.
func (c SubscriptionGroupConfig) Clone() SubscriptionGroupConfig {
	c.Attributes = maps.Clone(c.Attributes)
	c.GroupRetryPolicy = bytes.Clone(c.GroupRetryPolicy)
	c.SubscriptionDataSet = bytes.Clone(c.SubscriptionDataSet)
	return c
}

// DecodeSubscriptionGroupConfig reads one SubscriptionGroupConfig as a Java
// broker does (the UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body): fields
// missing from the object keep RocketMQ's defaults, names match in any case,
// numbers may come as strings and booleans as numbers or strings (and the
// reverse), unknown fields are ignored. The name is not validated here.
func DecodeSubscriptionGroupConfig(data []byte) (SubscriptionGroupConfig, error) {
	c := NewSubscriptionGroupConfig("")
	var fields map[string]json.RawMessage
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return c, fmt.Errorf("subscription group config: not a JSON object")
	}
	if err := json.Unmarshal(data, &fields); err != nil {
		return c, fmt.Errorf("subscription group config: %w", err)
	}
	for key, raw := range fields {
		if err := c.setField(strings.ToLower(key), raw); err != nil {
			return c, fmt.Errorf("subscription group config: field %q: %w", key, err)
		}
	}
	c.normalize()
	return c, nil
}

// setField reads one field leniently; a JSON null keeps the default.
func (c *SubscriptionGroupConfig) setField(key string, raw json.RawMessage) error {
	if string(raw) == "null" {
		return nil
	}
	var err error
	switch key {
	case "groupname":
		c.GroupName, err = lenientString(raw)
	case "consumeenable":
		c.ConsumeEnable, err = lenientBool(raw)
	case "consumefromminenable":
		c.ConsumeFromMinEnable, err = lenientBool(raw)
	case "consumebroadcastenable":
		c.ConsumeBroadcastEnable, err = lenientBool(raw)
	case "consumemessageorderly":
		c.ConsumeMessageOrderly, err = lenientBool(raw)
	case "notifyconsumeridschangedenable":
		c.NotifyConsumerIDsChangedEnable, err = lenientBool(raw)
	case "retryqueuenums":
		c.RetryQueueNums, err = lenientInt32(raw)
	case "retrymaxtimes":
		c.RetryMaxTimes, err = lenientInt32(raw)
	case "groupsysflag":
		c.GroupSysFlag, err = lenientInt32(raw)
	case "consumetimeoutminute":
		c.ConsumeTimeoutMinute, err = lenientInt32(raw)
	case "brokerid":
		c.BrokerID, err = lenientInt64(raw)
	case "whichbrokerwhenconsumeslowly":
		c.WhichBrokerWhenConsumeSlowly, err = lenientInt64(raw)
	case "attributes":
		err = lenientStringMap(raw, &c.Attributes)
	case "groupretrypolicy":
		if raw[0] != '{' {
			return fmt.Errorf("want an object, got %.20s", raw)
		}
		c.GroupRetryPolicy = compactJSON(raw)
	case "subscriptiondataset":
		if raw[0] != '[' {
			return fmt.Errorf("want an array, got %.20s", raw)
		}
		c.SubscriptionDataSet = compactJSON(raw)
	}
	return err
}

// compactJSON returns a compact copy of a well-formed JSON value, so that
// kept objects encode the same whatever white space they came with.
func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return bytes.Clone(raw) // cannot happen: raw came out of a decoder
	}
	return buf.Bytes()
}
