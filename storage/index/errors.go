package index

import "errors"

// Errors returned by this package, wrapped with the file or value involved;
// test with errors.Is.
var (
	// ErrInvalidOptions means Options failed validation.
	ErrInvalidOptions = errors.New("index: invalid options")
	// ErrOutOfOrder means Add was given a CommitLog offset below the previous
	// entry's: entries must be added in CommitLog order.
	ErrOutOfOrder = errors.New("index: entry offset below the previous entry's")
	// ErrFailed means an earlier write or fsync failed; the index refuses
	// writes until it is reopened (Open recovers to the durable position).
	ErrFailed = errors.New("index: failed, reopen to recover")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("index: closed")
)
