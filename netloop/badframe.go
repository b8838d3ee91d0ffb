package netloop

import (
	"errors"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// BadFrameReason classifies the invalid frame that made the server close a
// connection: a small fixed set, fit for a metric label.
type BadFrameReason int

// The reasons, in ServerStats.BadFramesBy order.
const (
	// BadFrameTooShort: the length field is below the 4-byte minimum.
	BadFrameTooShort BadFrameReason = iota
	// BadFrameTooLarge: the length field exceeds Config.MaxFrame, or the
	// header is longer than its 24-bit length can say.
	BadFrameTooLarge
	// BadFrameMalformed: the header or its lengths do not decode.
	BadFrameMalformed
	// NumBadFrameReasons is the number of reasons.
	NumBadFrameReasons
)

// String is the reason's label: too_short, too_large or malformed.
func (r BadFrameReason) String() string {
	switch r {
	case BadFrameTooShort:
		return "too_short"
	case BadFrameTooLarge:
		return "too_large"
	case BadFrameMalformed:
		return "malformed"
	}
	return "unknown"
}

// errTooShort marks a frame length below the minimum.
var errTooShort = errors.New("frame too short")

// badFrameReason classifies an error of drainFrames.
func badFrameReason(err error) BadFrameReason {
	switch {
	case errors.Is(err, errTooShort):
		return BadFrameTooShort
	case errors.Is(err, remoting.ErrFrameTooLarge):
		return BadFrameTooLarge
	}
	return BadFrameMalformed
}
