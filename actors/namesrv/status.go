package namesrv

import "errors"

// Status is the outcome of a Call: the one table a codec maps to its wire
// codes (netloop/nsrvcodec: RocketMQ's response codes).
type Status uint8

// The statuses. Keep String and the codec's table in step.
const (
	// OK: the call was served.
	OK Status = iota
	// Failed: a field is missing or malformed, a body does not decode or
	// its checksum does not match, or the KV configuration could not be
	// saved (RocketMQ answers SYSTEM_ERROR); nothing was changed.
	Failed
	// Invalid: a value parses but is not acceptable (ErrInvalidValue:
	// a negative broker id, an address the Go client cannot parse, an
	// ORDER_TOPIC_CONFIG value it cannot read); nothing was changed.
	Invalid
	// TopicNotFound: no route holds the topic.
	TopicNotFound
	// NotFound: the KV item or namespace asked for does not exist.
	NotFound
	// Fenced: a master registration older than the controller's master
	// epoch (CodeFencedMasterEpoch); nothing was changed.
	Fenced
	// Unsupported: the name server does not serve this call.
	Unsupported
	numStatuses
)

var statusNames = [numStatuses]string{
	OK: "OK", Failed: "FAILED", Invalid: "INVALID", TopicNotFound: "TOPIC_NOT_FOUND",
	NotFound: "NOT_FOUND", Fenced: "FENCED", Unsupported: "UNSUPPORTED",
}

// String returns the status's name.
func (s Status) String() string {
	if s < numStatuses {
		return statusNames[s]
	}
	return "UNKNOWN"
}

// statusOf is the package's error table: ErrInvalidValue is Invalid,
// every other error Failed.
func statusOf(err error) Status {
	if errors.Is(err, ErrInvalidValue) {
		return Invalid
	}
	return Failed
}

// StatusOf returns the Status a codec answers a request it could not
// decode with (err from its header parsing, wrapping the package's
// sentinel errors).
func StatusOf(err error) Status { return statusOf(err) }
