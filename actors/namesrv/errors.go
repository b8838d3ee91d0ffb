package namesrv

import (
	"errors"

	"github.com/wheelmq/wheelmq/actors/wirecode"
)

// Sentinel errors of the package; test with errors.Is. The status table
// (StatusOf) makes ErrInvalidValue Invalid and every other error Failed.
var (
	// ErrMissingField means a required header field is absent or empty.
	ErrMissingField = errors.New("namesrv: missing header field")
	// ErrBadField means a header field does not parse (e.g. a non-numeric id).
	ErrBadField = errors.New("namesrv: malformed header field")
	// ErrInvalidValue means a value parses but is not acceptable (negative
	// broker id, address the Go client cannot parse, negative queue count).
	ErrInvalidValue = errors.New("namesrv: invalid value")
	// ErrBadBody means a request or response body does not decode.
	ErrBadBody = errors.New("namesrv: malformed body")
	// ErrChecksum means the header bodyCrc32 does not match the body.
	ErrChecksum = errors.New("namesrv: crc32 not match")
)

// CodeFencedMasterEpoch (RocketMQ's CONTROLLER_FENCED_MASTER_EPOCH) answers
// a brokerId-0 REGISTER_BROKER whose master epoch is older than the one
// the embedded controller applied (Registry.SetMasterEpoch).
const CodeFencedMasterEpoch = wirecode.ControllerFencedMasterEpoch
