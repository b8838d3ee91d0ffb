package clients

import (
	"encoding/json"
	"fmt"
)

// HeartbeatData is the HEART_BEAT (34) body, as the Go and Java clients
// send it.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
}

// ProducerData names a producer group.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData describes one consumer group of the client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         []string `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// ParseHeartbeat decodes a HEART_BEAT body.
func ParseHeartbeat(body []byte) (HeartbeatData, error) {
	var hb HeartbeatData
	if err := json.Unmarshal(body, &hb); err != nil {
		return hb, fmt.Errorf("heartbeat body: %w", err)
	}
	if hb.ClientID == "" {
		return hb, fmt.Errorf("heartbeat body: clientID is empty")
	}
	return hb, nil
}
