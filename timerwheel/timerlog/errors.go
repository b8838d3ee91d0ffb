package timerlog

import "errors"

// Sentinel errors of the TimerLog. Callers test them with errors.Is; the
// returned errors wrap them with the file, sequence or offset involved.
var (
	// ErrCorrupt reports a record or segment that fails validation: bad
	// length, checksum, version, kind, or a sequence that does not match
	// its position.
	ErrCorrupt = errors.New("timerlog: corrupt")
	// ErrClosed is returned by operations on a closed log.
	ErrClosed = errors.New("timerlog: closed")
	// ErrOutOfRange is returned when a sequence lies outside the log.
	ErrOutOfRange = errors.New("timerlog: sequence out of range")
	// ErrOutOfOrder is returned by Append when a record's Seq is not the
	// next sequence.
	ErrOutOfOrder = errors.New("timerlog: sequence out of order")
	// ErrFailed is returned after a write or sync error: the log refuses
	// further writes until it is reopened.
	ErrFailed = errors.New("timerlog: failed after write error")
)
