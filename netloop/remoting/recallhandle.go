package remoting

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// recallHandleVersion opens every handle this broker hands out.
const recallHandleVersion = "v1"

// RecallHandle is RocketMQ's v1 recall handle (RecallMessageHandle.HandleV1)
// of the timer message uniq of topic on brokerName, due at dueMs: base64url
// of "v1 <topic> <brokerName> <dueMs> <uniqKey>". A timer message's SEND
// answer carries it (field recallHandle); RECALL_MESSAGE (370) takes it.
func RecallHandle(topic, brokerName string, dueMs int64, uniq string) string {
	raw := recallHandleVersion + " " + topic + " " + brokerName + " " + strconv.FormatInt(dueMs, 10) + " " + uniq
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// Recall is a decoded recall handle.
type Recall struct {
	Topic, BrokerName, Uniq string
	DueMs                   int64
}

// ErrRecallHandle is a handle that does not decode.
var ErrRecallHandle = errors.New(`recall handle is invalid (not base64url of "v1 topic brokerName dueMs uniqKey")`)

// ParseRecallHandle decodes a v1 recall handle (base64url with or without
// padding, as Java's encoder and others write it).
func ParseRecallHandle(h string) (Recall, error) {
	if h == "" || len(h) > 4096 {
		return Recall{}, ErrRecallHandle
	}
	raw, err := base64.URLEncoding.DecodeString(h)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(h); err != nil {
			return Recall{}, ErrRecallHandle
		}
	}
	f := strings.Split(string(raw), " ")
	if len(f) != 5 || f[0] != recallHandleVersion || f[1] == "" || f[2] == "" || f[4] == "" {
		return Recall{}, ErrRecallHandle
	}
	due, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return Recall{}, ErrRecallHandle
	}
	return Recall{Topic: f[1], BrokerName: f[2], DueMs: due, Uniq: f[4]}, nil
}
