package router

import (
	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// wireCodes maps each broker.Status to the RocketMQ response code a
// remoting client gets (RocketMQ's ResponseCode; a test checks every
// status has one).
var wireCodes = map[broker.Status]int32{
	broker.OK:                remoting.Success,
	broker.BadRequest:        remoting.InvalidParameter,
	broker.IllegalMessage:    remoting.MessageIllegal,
	broker.TypeMismatch:      remoting.MessageIllegal,
	broker.BodyTooLarge:      remoting.MessageIllegal,
	broker.BadDeliveryTime:   remoting.MessageIllegal,
	broker.TopicNotFound:     remoting.TopicNotExist,
	broker.GroupNotFound:     remoting.SubscriptionGroupNotExist,
	broker.Forbidden:         remoting.NoPermission,
	broker.Busy:              remoting.SystemBusy,
	broker.Unavailable:       remoting.ServiceNotAvailable,
	broker.NotMaster:         remoting.ServiceNotAvailable,
	broker.ReplicasNotEnough: remoting.SystemError,
	broker.FlushTimeout:      remoting.FlushDiskTimeout,
	broker.ReplicaTimeout:    remoting.FlushSlaveTimeout,
	broker.NotFound:          remoting.QueryNotFound,
	broker.BadFilter:         remoting.SubscriptionParseFailed,
	broker.NoSubscription:    remoting.SubscriptionNotExist,
	broker.Conflict:          remoting.IllegalOperation,
	broker.Unsupported:       remoting.RequestCodeNotSupported,
	broker.Internal:          remoting.SystemError,
	broker.HandleExpired:     remoting.PullNotFound,
	broker.BadInvisibleTime:  remoting.InvalidParameter,
	broker.FilterDataMissing: remoting.FilterDataNotExist,
}

// wireCode is st's remoting response code.
func wireCode(st broker.Status) int32 {
	if c, ok := wireCodes[st]; ok {
		return c
	}
	return remoting.SystemError
}

// refusalOf turns a broker call's error into the remoting answer's
// Refusal (nil for nil).
func refusalOf(err *broker.Error) *Refusal {
	if err == nil {
		return nil
	}
	return &Refusal{Code: wireCode(err.Status), Remark: err.Remark}
}
