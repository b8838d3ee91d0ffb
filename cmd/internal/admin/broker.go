package admin

// Broker-wide requests: GET_BROKER_RUNTIME_INFO (28), RECALL_MESSAGE (370)
// and wheelmq's CANCEL_TIMER_MESSAGE (3501).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// RuntimeInfo asks a broker for its runtime key/value table (facts 11.16:
// brokerVersionDesc, bootTimestamp, putTps, timerOffsetBehind, ...).
func (s *Session) RuntimeInfo(ctx context.Context, broker string) (map[string]string, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		Table map[string]string `json:"table"`
	}
	if err := decode("GET_BROKER_RUNTIME_INFO", resp.Body, &body); err != nil {
		return nil, err
	}
	return body.Table, nil
}

// CancelTimer cancels a pending timer message by the offset message id
// its send returned.
func (s *Session) CancelTimer(ctx context.Context, broker, offsetMsgID string) error {
	_, err := s.Call(ctx, broker, remoting.NewRequest(remoting.CancelTimerMessage, map[string]string{"msgId": offsetMsgID}, nil))
	return err
}

// RecallHandle is a decoded RocketMQ v1 recall handle: base64url of
// "v1 topic brokerName dueMs uniqKey" (RecallMessageHandle.HandleV1).
type RecallHandle struct {
	Topic, BrokerName, UniqKey string
	DueMs                      int64
}

// errRecallHandle is a handle that does not decode.
var errRecallHandle = errors.New("not a v1 recall handle (base64url of \"v1 topic brokerName dueMs uniqKey\")")

// ParseRecallHandle decodes a v1 recall handle, padded or not.
func ParseRecallHandle(h string) (RecallHandle, error) {
	if h == "" || len(h) > 4096 {
		return RecallHandle{}, errRecallHandle
	}
	raw, err := base64.URLEncoding.DecodeString(h)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(h); err != nil {
			return RecallHandle{}, errRecallHandle
		}
	}
	f := strings.Split(string(raw), " ")
	if len(f) != 5 || f[0] != "v1" || f[1] == "" || f[2] == "" || f[4] == "" {
		return RecallHandle{}, errRecallHandle
	}
	due, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return RecallHandle{}, fmt.Errorf("due time %q: %w", f[3], errRecallHandle)
	}
	return RecallHandle{Topic: f[1], BrokerName: f[2], DueMs: due, UniqKey: f[4]}, nil
}

// Recall withdraws a pending timer message of topic by its recall handle
// (RECALL_MESSAGE 370) and returns the message id the broker answered.
func (s *Session) Recall(ctx context.Context, broker, topic, handle string) (string, error) {
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.RecallMessage, map[string]string{
		"producerGroup": topic, "topic": topic, "recallHandle": handle,
	}, nil))
	if err != nil {
		return "", err
	}
	return resp.Field("msgId"), nil
}
