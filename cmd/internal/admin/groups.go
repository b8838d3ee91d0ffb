package admin

// Consumer-group requests: QUERY_CONSUMER_OFFSET (14),
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), GET_CONSUMER_CONNECTION_LIST
// (203), GET_CONSUME_STATS (208), INVOKE_BROKER_TO_RESET_OFFSET (222).
// Bodies as in facts 11.14 and 11.15.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// ConsumerOffset returns a group's committed offset of one queue; found
// is false when the broker has none (QUERY_NOT_FOUND).
func (s *Session) ConsumerOffset(ctx context.Context, broker, group, topic string, queue int) (off int64, found bool, err error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue),
	}, nil), remoting.QueryNotFound)
	if err != nil {
		return 0, false, err
	}
	if resp.Code == remoting.QueryNotFound {
		return 0, false, nil
	}
	off, err = offset(resp, "QUERY_CONSUMER_OFFSET")
	return off, err == nil, err
}

// GroupConfig is the part of RocketMQ's SubscriptionGroupConfig wheelctl
// shows.
type GroupConfig struct {
	GroupName              string `json:"groupName"`
	ConsumeEnable          bool   `json:"consumeEnable"`
	ConsumeBroadcastEnable bool   `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly  bool   `json:"consumeMessageOrderly"`
	RetryMaxTimes          int    `json:"retryMaxTimes"`
	RetryQueueNums         int    `json:"retryQueueNums"`
}

// Groups returns one broker's subscription-group table
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
func (s *Session) Groups(ctx context.Context, broker string) (map[string]GroupConfig, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(GetAllSubscriptionGroupConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		SubscriptionGroupTable map[string]GroupConfig `json:"subscriptionGroupTable"`
	}
	if err := decode("GET_ALL_SUBSCRIPTIONGROUP_CONFIG", resp.Body, &body); err != nil {
		return nil, err
	}
	return body.SubscriptionGroupTable, nil
}

// QueueProgress is one queue's figures in GET_CONSUME_STATS (RocketMQ's
// OffsetWrapper).
type QueueProgress struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"` // store time of the last consumed message (ms, 0: none)
}

// Lag is the messages the group has not consumed (all of the queue when
// the group has no offset, ConsumerOffset < 0).
func (q QueueProgress) Lag() int64 { return max(q.BrokerOffset-max(q.ConsumerOffset, 0), 0) }

// ConsumeStats is a group's progress on one broker.
type ConsumeStats struct {
	ConsumeTps float64
	Queues     map[MessageQueue]QueueProgress
}

// ConsumeStats asks a broker for a group's progress on topic (all the
// group's topics when topic is "").
func (s *Session) ConsumeStats(ctx context.Context, broker, group, topic string) (ConsumeStats, error) {
	f := map[string]string{"consumerGroup": group}
	if topic != "" {
		f["topic"] = topic
	}
	resp, err := s.Call(ctx, broker, remoting.NewRequest(GetConsumeStats, f, nil))
	if err != nil {
		return ConsumeStats{}, err
	}
	return DecodeConsumeStats(resp.Body)
}

// DecodeConsumeStats decodes a ConsumeStats body.
func DecodeConsumeStats(body []byte) (ConsumeStats, error) {
	var b struct {
		ConsumeTps  float64                  `json:"consumeTps"`
		OffsetTable map[string]QueueProgress `json:"offsetTable"`
	}
	if err := decode("GET_CONSUME_STATS", body, &b); err != nil {
		return ConsumeStats{}, err
	}
	q, err := decodeQueueTable(b.OffsetTable)
	if err != nil {
		return ConsumeStats{}, err
	}
	return ConsumeStats{ConsumeTps: b.ConsumeTps, Queues: q}, nil
}

// Connection is one consumer client of a group.
type Connection struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

// Connections is a group's consumers as one broker sees them.
type Connections struct {
	Clients          []Connection
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	Topics           []string // subscribed topics
}

// Connections asks a broker for a group's consumers; a group with none
// online gives an empty list, not an error.
func (s *Session) Connections(ctx context.Context, broker, group string) (Connections, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(GetConsumerConnectionList,
		map[string]string{"consumerGroup": group}, nil), consumerNotOnline)
	if err != nil {
		return Connections{}, err
	}
	if resp.Code == consumerNotOnline {
		return Connections{}, nil
	}
	var b struct {
		ConnectionSet     []Connection   `json:"connectionSet"`
		ConsumeType       string         `json:"consumeType"`
		MessageModel      string         `json:"messageModel"`
		ConsumeFromWhere  string         `json:"consumeFromWhere"`
		SubscriptionTable map[string]any `json:"subscriptionTable"`
	}
	if err := decode("GET_CONSUMER_CONNECTION_LIST", resp.Body, &b); err != nil {
		return Connections{}, err
	}
	c := Connections{Clients: b.ConnectionSet, ConsumeType: b.ConsumeType, MessageModel: b.MessageModel,
		ConsumeFromWhere: b.ConsumeFromWhere}
	for t := range b.SubscriptionTable {
		c.Topics = append(c.Topics, t)
	}
	return c, nil
}

// ResetOffsets moves group's offsets of topic on a broker
// (INVOKE_BROKER_TO_RESET_OFFSET, 222): every queue to the first message
// stored at or after timestamp (epoch ms, -1: the end), or, with queue >=
// 0 and offset >= 0, that queue to offset. It returns the new offsets by
// queue id.
func (s *Session) ResetOffsets(ctx context.Context, broker, group, topic string, timestamp int64, queue int, offset int64) (map[int32]int64, error) {
	fields := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(timestamp, 10), "isForce": "true"}
	if queue >= 0 && offset >= 0 {
		fields["queueId"], fields["offset"] = strconv.Itoa(queue), strconv.FormatInt(offset, 10)
	}
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.InvokeBrokerToResetOffset, fields, nil))
	if err != nil {
		return nil, err
	}
	body, err := adminbody.DecodeResetOffsetBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("INVOKE_BROKER_TO_RESET_OFFSET answer: %w", err)
	}
	out := make(map[int32]int64, len(body.OffsetTable))
	for mq, off := range body.OffsetTable {
		out[mq.QueueID] = off
	}
	return out, nil
}

// ConsumedBy returns the groups a broker knows to read topic
// (QUERY_TOPIC_CONSUME_BY_WHO, 300): those whose online consumers
// subscribe to it and those with committed offsets for it.
func (s *Session) ConsumedBy(ctx context.Context, broker, topic string) ([]string, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.QueryTopicConsumeByWho, map[string]string{"topic": topic}, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		GroupList []string `json:"groupList"`
	}
	if err := decode("QUERY_TOPIC_CONSUME_BY_WHO", resp.Body, &body); err != nil {
		return nil, err
	}
	return body.GroupList, nil
}

// PutGroup creates or replaces a subscription group on one broker
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200) with the config cfg, RocketMQ's
// SubscriptionGroupConfig as JSON (meta.SubscriptionGroupConfig).
func (s *Session) PutGroup(ctx context.Context, broker string, cfg []byte) error {
	_, err := s.Call(ctx, broker, remoting.NewRequest(UpdateAndCreateSubscriptionGroup, nil, cfg))
	return err
}
