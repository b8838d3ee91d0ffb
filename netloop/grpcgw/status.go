package grpcgw

import (
	"fmt"
	"strings"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Remoting response codes of the POP family (RocketMQ ResponseCode) the
// gateway maps.
const (
	codeNoMessage      = remoting.PullNotFound // NO_MESSAGE (= PULL_NOT_FOUND)
	codePollingFull    = remoting.PollingFull
	codePollingTimeout = remoting.PollingTimeout
	codeNotMaster      = remoting.ServiceNotAvailable // "[NOT_MASTER]" on a replica
)

// okStatus is the in-band OK.
func okStatus() *v2.Status { return &v2.Status{Code: v2.Code_OK, Message: "OK"} }

// statusf builds an in-band status.
func statusf(code v2.Code, format string, args ...any) *v2.Status {
	return &v2.Status{Code: code, Message: fmt.Sprintf(format, args...)}
}

// fromRemoting maps a broker response code to an in-band status (the
// Apache proxy's ResponseCode -> Code mapping, narrowed to what the broker
// answers). what names the operation for the message.
func fromRemoting(resp *remoting.Command, what string) *v2.Status {
	msg := resp.Remark
	if msg == "" {
		msg = what
	}
	switch resp.Code {
	case remoting.Success:
		return okStatus()
	case remoting.TopicNotExist:
		return &v2.Status{Code: v2.Code_TOPIC_NOT_FOUND, Message: msg}
	case remoting.SubscriptionGroupNotExist:
		return &v2.Status{Code: v2.Code_CONSUMER_GROUP_NOT_FOUND, Message: msg}
	case remoting.NoPermission:
		return &v2.Status{Code: v2.Code_FORBIDDEN, Message: msg}
	case remoting.MessageIllegal:
		if strings.HasPrefix(resp.Remark, "TopicMessageType validate failed") { // the broker's type check (router/msgtype.go)
			return &v2.Status{Code: v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, Message: msg}
		}
		return &v2.Status{Code: v2.Code_BAD_REQUEST, Message: msg}
	case remoting.InvalidParameter, remoting.SubscriptionParseFailed:
		return &v2.Status{Code: v2.Code_BAD_REQUEST, Message: msg}
	case remoting.SystemBusy, codePollingFull:
		return &v2.Status{Code: v2.Code_TOO_MANY_REQUESTS, Message: msg}
	case remoting.FlushDiskTimeout:
		return &v2.Status{Code: v2.Code_MASTER_PERSISTENCE_TIMEOUT, Message: msg}
	case remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable:
		return &v2.Status{Code: v2.Code_SLAVE_PERSISTENCE_TIMEOUT, Message: msg}
	case remoting.RequestCodeNotSupported:
		return &v2.Status{Code: v2.Code_NOT_IMPLEMENTED, Message: msg}
	case codeNoMessage, codePollingTimeout:
		return &v2.Status{Code: v2.Code_MESSAGE_NOT_FOUND, Message: msg}
	case remoting.ServiceNotAvailable:
		return &v2.Status{Code: v2.Code_HA_NOT_AVAILABLE, Message: msg}
	}
	return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: fmt.Sprintf("broker code %d: %s", resp.Code, msg)}
}

// internalStatus reports a failed internal request.
func internalStatus(err error) *v2.Status {
	return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: err.Error()}
}
