package admin

// Broker-wide requests: GET_BROKER_RUNTIME_INFO (28), RECALL_MESSAGE (370)
// and wheelmq's CANCEL_TIMER_MESSAGE (3501).

import (
	"context"

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
