package broker

import (
	"errors"
	"fmt"
)

// Status is the outcome of a call: the one table every codec maps to its
// own wire codes (netloop/router/status.go, netloop/grpcgw/status.go).
type Status uint8

// The statuses. Keep String and the codecs' tables in step.
const (
	// OK: the call was served.
	OK Status = iota
	// BadRequest: a field is missing, malformed or out of range.
	BadRequest
	// IllegalMessage: a message the broker will not store (empty or
	// oversize body, properties too large, a type its topic refuses, a
	// delay beyond the longest).
	IllegalMessage
	// TypeMismatch: a message whose type (NORMAL, FIFO, DELAY,
	// TRANSACTION) its topic's message.type does not take.
	TypeMismatch
	// BodyTooLarge: a body over the broker's limit.
	BodyTooLarge
	// BadDeliveryTime: a timer's delivery time beyond the longest delay or
	// otherwise unusable.
	BadDeliveryTime
	// TopicNotFound: the topic does not exist and may not be created.
	TopicNotFound
	// GroupNotFound: the consumer group does not exist and may not be
	// created.
	GroupNotFound
	// Forbidden: the caller may not do this (ACL, a system topic, a topic
	// or group without the permission).
	Forbidden
	// Busy: too much waits already; retry later.
	Busy
	// Unavailable: the broker cannot serve this now (a full disk, a stage
	// that is down); nothing was changed.
	Unavailable
	// NotMaster: the broker is not its group's master; nothing was changed.
	NotMaster
	// ReplicasNotEnough: fewer in-sync replicas than required; nothing was
	// stored.
	ReplicasNotEnough
	// FlushTimeout: stored but not flushed to disk in time (sync flush).
	FlushTimeout
	// ReplicaTimeout: stored on the master but not confirmed by the
	// replicas in time.
	ReplicaTimeout
	// NotFound: the message, handle, offset or transaction asked for is
	// not there (or no longer).
	NotFound
	// BadFilter: a subscription expression that does not parse.
	BadFilter
	// NoSubscription: a consumer asked with no subscription known.
	NoSubscription
	// Conflict: the call contradicts state (a pull on a queue held by
	// POP, an invisible-time change of an expired handle).
	Conflict
	// Unsupported: the broker does not serve this call.
	Unsupported
	// Internal: anything else; the remark says what.
	Internal
	// HandleExpired: a receipt handle whose delivery is no longer in
	// flight (acked, changed, or past its invisibility).
	HandleExpired
	// BadInvisibleTime: an invisible time outside the broker's bounds.
	BadInvisibleTime
	// FilterDataMissing: the subscription its group registered for a
	// pull's topic does not compile (the consumer posted none).
	FilterDataMissing
	numStatuses
)

var statusNames = [numStatuses]string{
	OK: "OK", BadRequest: "BAD_REQUEST", IllegalMessage: "ILLEGAL_MESSAGE", TypeMismatch: "TYPE_MISMATCH",
	BodyTooLarge: "BODY_TOO_LARGE", BadDeliveryTime: "BAD_DELIVERY_TIME", TopicNotFound: "TOPIC_NOT_FOUND",
	FlushTimeout:  "FLUSH_TIMEOUT",
	GroupNotFound: "GROUP_NOT_FOUND", Forbidden: "FORBIDDEN", Busy: "BUSY", Unavailable: "UNAVAILABLE",
	NotMaster: "NOT_MASTER", ReplicasNotEnough: "REPLICAS_NOT_ENOUGH", ReplicaTimeout: "REPLICA_TIMEOUT",
	NotFound: "NOT_FOUND", BadFilter: "BAD_FILTER", NoSubscription: "NO_SUBSCRIPTION", Conflict: "CONFLICT",
	Unsupported: "UNSUPPORTED", Internal: "INTERNAL", HandleExpired: "HANDLE_EXPIRED",
	BadInvisibleTime: "BAD_INVISIBLE_TIME", FilterDataMissing: "FILTER_DATA_MISSING",
}

// String names the status (as metric labels and logs show it).
func (s Status) String() string {
	if s < numStatuses {
		return statusNames[s]
	}
	return fmt.Sprintf("STATUS_%d", uint8(s))
}

// Statuses lists every status, for the codecs' table tests.
func Statuses() []Status {
	out := make([]Status, 0, numStatuses)
	for s := OK; s < numStatuses; s++ {
		out = append(out, s)
	}
	return out
}

// Error is a call's refusal or failure: its status, the remark the client
// shows, and the cause when there is one.
type Error struct {
	Status Status
	Remark string
	Err    error
}

// Errorf builds an *Error with a formatted remark.
func Errorf(st Status, format string, args ...any) *Error {
	return &Error{Status: st, Remark: fmt.Sprintf(format, args...)}
}

// Wrap builds an *Error for a cause; the remark is prefix and the cause.
func Wrap(st Status, prefix string, err error) *Error {
	return &Error{Status: st, Remark: prefix + ": " + err.Error(), Err: err}
}

// Error implements error.
func (e *Error) Error() string { return e.Status.String() + ": " + e.Remark }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// StatusOf is err's status: OK for nil, the status of an *Error in its
// chain, Internal for anything else.
func StatusOf(err error) Status {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return Internal
}
