package adminbody

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Connection is one client connection in a ConsumerConnection or a
// ProducerConnection.
type Connection struct {
	// ClientAddr is the connection's remote address, "ip:port".
	ClientAddr string `json:"clientAddr"`
	// ClientID is the id the client sends in its heartbeats.
	ClientID string `json:"clientId"`
	// Language is the client's language from its request headers ("GO").
	Language string `json:"language"`
	// Version is the client's MQVersion ordinal from its request headers.
	Version int32 `json:"version"`
}

// SubscriptionData is a consumer's subscription to one topic, with Java's
// field order and codeSet as numbers.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	CodeSet         []int32  `json:"codeSet"`
	ExpressionType  string   `json:"expressionType"`
	SubString       string   `json:"subString"`
	SubVersion      int64    `json:"subVersion"`
	TagsSet         []string `json:"tagsSet"`
	Topic           string   `json:"topic"`
}

// ConsumerConnection is the GET_CONSUMER_CONNECTION_LIST (203) body.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere,omitempty"`
	ConsumeType       string                      `json:"consumeType,omitempty"`
	MessageModel      string                      `json:"messageModel,omitempty"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
}

// Encode renders c; connections are sorted by client id.
func (c ConsumerConnection) Encode() ([]byte, error) {
	c.ConnectionSet = sortedConnections(c.ConnectionSet)
	if c.SubscriptionTable == nil {
		c.SubscriptionTable = map[string]SubscriptionData{}
	}
	for k, s := range c.SubscriptionTable {
		if s.CodeSet == nil {
			s.CodeSet = []int32{}
		}
		if s.TagsSet == nil {
			s.TagsSet = []string{}
		}
		c.SubscriptionTable[k] = s
	}
	return appendJSON(nil, c)
}

// DecodeConsumerConnection reads a ConsumerConnection body.
func DecodeConsumerConnection(body []byte) (ConsumerConnection, error) {
	var c ConsumerConnection
	if err := json.Unmarshal(body, &c); err != nil {
		return c, fmt.Errorf("consumer connection: %w", err)
	}
	return c, nil
}

// ProducerConnection is the GET_PRODUCER_CONNECTION_LIST (204) body.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// Encode renders p; connections are sorted by client id.
func (p ProducerConnection) Encode() ([]byte, error) {
	p.ConnectionSet = sortedConnections(p.ConnectionSet)
	return appendJSON(nil, p)
}

// DecodeProducerConnection reads a ProducerConnection body.
func DecodeProducerConnection(body []byte) (ProducerConnection, error) {
	var p ProducerConnection
	if err := json.Unmarshal(body, &p); err != nil {
		return p, fmt.Errorf("producer connection: %w", err)
	}
	return p, nil
}

func sortedConnections(in []Connection) []Connection {
	out := slices.Clone(in)
	if out == nil {
		out = []Connection{}
	}
	slices.SortFunc(out, func(a, b Connection) int {
		if c := strings.Compare(a.ClientID, b.ClientID); c != 0 {
			return c
		}
		return strings.Compare(a.ClientAddr, b.ClientAddr)
	})
	return out
}

// ProducerInfo is one producer client of a group in GET_ALL_PRODUCER_INFO
// (328), RocketMQ's ProducerInfo.
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	RemoteIP            string `json:"remoteIP"`
	Language            string `json:"language"`
	Version             int32  `json:"version"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

// ProducerTableInfo is the GET_ALL_PRODUCER_INFO (328) body: producer
// group -> its clients.
type ProducerTableInfo struct {
	Data map[string][]ProducerInfo `json:"data"`
}
