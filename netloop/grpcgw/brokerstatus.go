package grpcgw

import (
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
)

// grpcCodes maps each broker.Status to the RocketMQ 5 code a gRPC client
// gets (the Apache proxy's mapping; a test checks every status has one).
var grpcCodes = map[broker.Status]v2.Code{
	broker.OK:                v2.Code_OK,
	broker.BadRequest:        v2.Code_BAD_REQUEST,
	broker.IllegalMessage:    v2.Code_BAD_REQUEST,
	broker.TypeMismatch:      v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
	broker.BodyTooLarge:      v2.Code_MESSAGE_BODY_TOO_LARGE,
	broker.BadDeliveryTime:   v2.Code_ILLEGAL_DELIVERY_TIME,
	broker.TopicNotFound:     v2.Code_TOPIC_NOT_FOUND,
	broker.GroupNotFound:     v2.Code_CONSUMER_GROUP_NOT_FOUND,
	broker.Forbidden:         v2.Code_FORBIDDEN,
	broker.Busy:              v2.Code_TOO_MANY_REQUESTS,
	broker.Unavailable:       v2.Code_HA_NOT_AVAILABLE,
	broker.NotMaster:         v2.Code_HA_NOT_AVAILABLE,
	broker.ReplicasNotEnough: v2.Code_HA_NOT_AVAILABLE,
	broker.FlushTimeout:      v2.Code_MASTER_PERSISTENCE_TIMEOUT,
	broker.ReplicaTimeout:    v2.Code_SLAVE_PERSISTENCE_TIMEOUT,
	broker.NotFound:          v2.Code_MESSAGE_NOT_FOUND,
	broker.BadFilter:         v2.Code_ILLEGAL_FILTER_EXPRESSION,
	broker.NoSubscription:    v2.Code_BAD_REQUEST,
	broker.Conflict:          v2.Code_BAD_REQUEST,
	broker.Unsupported:       v2.Code_NOT_IMPLEMENTED,
	broker.Internal:          v2.Code_INTERNAL_SERVER_ERROR,
	broker.HandleExpired:     v2.Code_INVALID_RECEIPT_HANDLE,
	broker.BadInvisibleTime:  v2.Code_ILLEGAL_INVISIBLE_TIME,
	broker.FilterDataMissing: v2.Code_ILLEGAL_FILTER_EXPRESSION,
}

// fromBroker maps a broker call's error to an in-band status (OK for nil).
func fromBroker(err *broker.Error) *v2.Status {
	if err == nil {
		return okStatus()
	}
	code, ok := grpcCodes[err.Status]
	if !ok {
		code = v2.Code_INTERNAL_SERVER_ERROR
	}
	return &v2.Status{Code: code, Message: err.Remark}
}
