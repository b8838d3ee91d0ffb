package admin

// Broker topic and offset requests: UPDATE_AND_CREATE_TOPIC (17),
// GET_ALL_TOPIC_CONFIG (21), DELETE_TOPIC_IN_BROKER (215), GET_MAX_OFFSET
// (30), GET_MIN_OFFSET (31), GET_TOPIC_STATS_INFO (202).

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Permission bits of a topic (RocketMQ PermName).
const (
	PermInherit = 1
	PermWrite   = 2
	PermRead    = 4
)

// PermString shows permission bits as r, w, rw or -.
func PermString(perm int) string {
	s := ""
	if perm&PermRead != 0 {
		s += "r"
	}
	if perm&PermWrite != 0 {
		s += "w"
	}
	if s == "" {
		return "-"
	}
	return s
}

// TopicConfig is RocketMQ's TopicConfig.
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int    `json:"readQueueNums"`
	WriteQueueNums  int    `json:"writeQueueNums"`
	Perm            int    `json:"perm"`
	TopicFilterType string `json:"topicFilterType"`
	TopicSysFlag    int    `json:"topicSysFlag"`
	Order           bool   `json:"order"`
	// Attributes are the topic's attributes (message.type, ...), plain keys.
	Attributes map[string]string `json:"attributes,omitempty"`
	// AttributeMods, when set, is sent as UPDATE_AND_CREATE_TOPIC's
	// attributes header as it is ("+k=v,-k"); else Attributes, as "+k=v".
	AttributeMods string `json:"-"`
}

// CreateTopic creates or updates a topic on one broker.
func (s *Session) CreateTopic(ctx context.Context, broker string, tc TopicConfig) error {
	filter := tc.TopicFilterType
	if filter == "" {
		filter = "SINGLE_TAG"
	}
	h := map[string]string{
		"topic": tc.TopicName, "defaultTopic": "TBW102",
		"readQueueNums": strconv.Itoa(tc.ReadQueueNums), "writeQueueNums": strconv.Itoa(tc.WriteQueueNums),
		"perm": strconv.Itoa(tc.Perm), "topicFilterType": filter, "topicSysFlag": strconv.Itoa(tc.TopicSysFlag),
		"order": strconv.FormatBool(tc.Order),
	}
	if mods := tc.AttributeMods; mods != "" {
		h["attributes"] = mods
	} else if len(tc.Attributes) > 0 {
		h["attributes"] = meta.FormatAttributes(tc.Attributes)
	}
	_, err := s.Call(ctx, broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, h, nil))
	return err
}

// TopicConfigs returns one broker's topic table.
func (s *Session) TopicConfigs(ctx context.Context, broker string) (map[string]TopicConfig, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	}
	if err := decode("GET_ALL_TOPIC_CONFIG", resp.Body, &body); err != nil {
		return nil, err
	}
	return body.TopicConfigTable, nil
}

// DeleteTopic deletes a topic from one broker.
func (s *Session) DeleteTopic(ctx context.Context, broker, topic string) error {
	_, err := s.Call(ctx, broker, remoting.NewRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": topic}, nil))
	return err
}

// offset reads the `offset` field of an answer.
func offset(resp *remoting.Command, what string) (int64, error) {
	v, err := strconv.ParseInt(resp.Field("offset"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: answer without a number in offset (%q)", what, resp.Field("offset"))
	}
	return v, nil
}

// QueueBounds returns a queue's min and max offsets (GET_MIN_OFFSET,
// GET_MAX_OFFSET).
func (s *Session) QueueBounds(ctx context.Context, broker, topic string, queue int) (minOff, maxOff int64, err error) {
	fields := func() map[string]string {
		return map[string]string{"topic": topic, "queueId": strconv.Itoa(queue)}
	}
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.GetMinOffset, fields(), nil))
	if err != nil {
		return 0, 0, err
	}
	if minOff, err = offset(resp, "GET_MIN_OFFSET"); err != nil {
		return 0, 0, err
	}
	if resp, err = s.Call(ctx, broker, remoting.NewRequest(remoting.GetMaxOffset, fields(), nil)); err != nil {
		return 0, 0, err
	}
	maxOff, err = offset(resp, "GET_MAX_OFFSET")
	return minOff, maxOff, err
}

// MessageQueue identifies one queue (the key of admin offset tables).
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

// decodeQueueTable decodes a map keyed by MessageQueue (fastjson or
// stringified keys, see Normalize) into out.
func decodeQueueTable[V any](raw map[string]V) (map[MessageQueue]V, error) {
	out := make(map[MessageQueue]V, len(raw))
	for k, v := range raw {
		var mq MessageQueue
		if err := json.Unmarshal([]byte(k), &mq); err != nil {
			return nil, fmt.Errorf("queue key %q: %w", k, err)
		}
		out[mq] = v
	}
	return out, nil
}

// TopicOffset is one queue's figures in GET_TOPIC_STATS_INFO.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStats asks a broker for a topic's per-queue offsets
// (GET_TOPIC_STATS_INFO).
func (s *Session) TopicStats(ctx context.Context, broker, topic string) (map[MessageQueue]TopicOffset, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(GetTopicStatsInfo, map[string]string{"topic": topic}, nil))
	if err != nil {
		return nil, err
	}
	return DecodeTopicStats(resp.Body)
}

// DecodeTopicStats decodes a TopicStatsTable body.
func DecodeTopicStats(body []byte) (map[MessageQueue]TopicOffset, error) {
	var b struct {
		OffsetTable map[string]TopicOffset `json:"offsetTable"`
	}
	if err := decode("GET_TOPIC_STATS_INFO", body, &b); err != nil {
		return nil, err
	}
	return decodeQueueTable(b.OffsetTable)
}
