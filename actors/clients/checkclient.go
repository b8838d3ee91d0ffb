package clients

import (
	"encoding/json"
	"fmt"
)

// CheckClientBody is the CHECK_CLIENT_CONFIG (46) body (RocketMQ's
// CheckClientRequestBody): the Java push consumer sends it at start for
// each subscription that is not a tag expression and refuses to start on a
// non-zero answer.
type CheckClientBody struct {
	ClientID     string               `json:"clientId"`
	Group        string               `json:"group"`
	Namespace    string               `json:"namespace"`
	Subscription *CheckedSubscription `json:"subscriptionData"`
}

// CheckedSubscription is the part of a SubscriptionData that the check
// needs. Other fields (tagsSet, codeSet: numbers in Java's JSON) are
// ignored.
type CheckedSubscription struct {
	Topic          string `json:"topic"`
	SubString      string `json:"subString"`
	SubVersion     int64  `json:"subVersion"`
	ExpressionType string `json:"expressionType"`
}

// ParseCheckClientBody decodes a CHECK_CLIENT_CONFIG body. A body without
// subscriptionData is valid (RocketMQ answers SUCCESS).
func ParseCheckClientBody(body []byte) (CheckClientBody, error) {
	var b CheckClientBody
	if err := json.Unmarshal(body, &b); err != nil {
		return b, fmt.Errorf("check client config body: %w", err)
	}
	return b, nil
}
