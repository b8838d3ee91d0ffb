package consumequeue

import "errors"

// Errors returned by this package; test for them with errors.Is. Returned
// errors wrap these with the queue or path involved.
var (
	// ErrClosed is returned after the store (or the queue's topic) was
	// closed or deleted.
	ErrClosed = errors.New("consumequeue: closed")
	// ErrOutOfRange means a logical offset lies outside [MinOffset,
	// MaxOffset].
	ErrOutOfRange = errors.New("consumequeue: offset out of range")
	// ErrInvalidUnit means a unit given to Append has a negative offset, a
	// size <= 0, or an offset not above the previous unit's.
	ErrInvalidUnit = errors.New("consumequeue: invalid unit")
	// ErrInvalidTopic means a topic name is empty, too long, or has
	// characters outside [%|a-zA-Z0-9_-].
	ErrInvalidTopic = errors.New("consumequeue: invalid topic name")
	// ErrInvalidQueueID means a negative queue id.
	ErrInvalidQueueID = errors.New("consumequeue: invalid queue id")
	// ErrFailed means an earlier fsync or rollback failed; the queue refuses
	// writes until it is reopened (Queue.Reopen, or a process restart).
	ErrFailed = errors.New("consumequeue: failed, reopen to recover")
	// ErrInvalidOptions means Options failed validation.
	ErrInvalidOptions = errors.New("consumequeue: invalid options")
	// ErrLayout means a queue's files are not contiguous multiples of
	// UnitsPerFile (for example UnitsPerFile changed).
	ErrLayout = errors.New("consumequeue: unit files do not match UnitsPerFile")
)
