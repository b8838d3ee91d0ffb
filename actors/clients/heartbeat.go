package clients

import (
	"encoding/json"
	"fmt"

	"github.com/wheelmq/wheelmq/storage/lenient"
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
	// CodeSet holds the tags' hash codes as decimal text: the Go client
	// sends strings, Java (a Set<Integer>), ali-ons and the C++ client send
	// numbers.
	CodeSet        []string `json:"codeSet"`
	SubVersion     int64    `json:"subVersion"`
	ExpressionType string   `json:"expressionType"`
}

// Enum names by ordinal, for clients that write a Java enum as its ordinal
// (fastjson reads both).
var (
	consumeTypeNames      = []string{"CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP"}
	messageModelNames     = []string{"BROADCASTING", "CLUSTERING"}
	consumeFromWhereNames = []string{"CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
		"CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"}
)

// The wire forms of the body, read leniently (package lenient): strings,
// numbers and booleans are accepted for one another where fastjson accepts
// them, and missing fields are zero.
type (
	heartbeatWire struct {
		ClientID        lenient.String `json:"clientID"`
		ProducerDataSet []struct {
			GroupName lenient.String `json:"groupName"`
		} `json:"producerDataSet"`
		ConsumerDataSet []consumerWire `json:"consumerDataSet"`
	}
	consumerWire struct {
		GroupName           lenient.String     `json:"groupName"`
		ConsumeType         lenient.String     `json:"consumeType"`
		MessageModel        lenient.String     `json:"messageModel"`
		ConsumeFromWhere    lenient.String     `json:"consumeFromWhere"`
		SubscriptionDataSet []subscriptionWire `json:"subscriptionDataSet"`
		UnitMode            lenient.Bool       `json:"unitMode"`
	}
	subscriptionWire struct {
		ClassFilterMode lenient.Bool     `json:"classFilterMode"`
		Topic           lenient.String   `json:"topic"`
		SubString       lenient.String   `json:"subString"`
		TagsSet         []lenient.String `json:"tagsSet"`
		CodeSet         []lenient.String `json:"codeSet"`
		SubVersion      lenient.Int64    `json:"subVersion"`
		ExpressionType  lenient.String   `json:"expressionType"`
	}
)

// ParseHeartbeat decodes a HEART_BEAT body as a Java broker reads it: the
// Go client's form (codeSet as strings), Java's and ali-ons' (codeSet as
// numbers), the C++ client's (subVersion as a string, no expressionType),
// numbers and strings accepted for one another, missing fields zero. A
// missing expressionType is TAG, Java's default; enum fields given as
// ordinals are read as their names. The clientID must not be empty.
func ParseHeartbeat(body []byte) (HeartbeatData, error) {
	var w heartbeatWire
	if err := json.Unmarshal(body, &w); err != nil {
		return HeartbeatData{}, fmt.Errorf("heartbeat body: %w", err)
	}
	hb := HeartbeatData{ClientID: string(w.ClientID)}
	if hb.ClientID == "" {
		return hb, fmt.Errorf("heartbeat body: clientID is empty")
	}
	for _, p := range w.ProducerDataSet {
		hb.ProducerDataSet = append(hb.ProducerDataSet, ProducerData{GroupName: string(p.GroupName)})
	}
	for _, c := range w.ConsumerDataSet {
		cd := ConsumerData{
			GroupName:        string(c.GroupName),
			ConsumeType:      lenient.Enum(c.ConsumeType, consumeTypeNames),
			MessageModel:     lenient.Enum(c.MessageModel, messageModelNames),
			ConsumeFromWhere: lenient.Enum(c.ConsumeFromWhere, consumeFromWhereNames),
			UnitMode:         bool(c.UnitMode),
		}
		for _, s := range c.SubscriptionDataSet {
			sd := SubscriptionData{
				ClassFilterMode: bool(s.ClassFilterMode),
				Topic:           string(s.Topic),
				SubString:       string(s.SubString),
				TagsSet:         lenient.Strings(s.TagsSet),
				CodeSet:         lenient.Strings(s.CodeSet),
				SubVersion:      int64(s.SubVersion),
				ExpressionType:  string(s.ExpressionType),
			}
			if sd.ExpressionType == "" {
				sd.ExpressionType = "TAG"
			}
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, sd)
		}
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
	}
	return hb, nil
}
