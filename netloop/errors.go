package netloop

import "errors"

// Errors of the server and its connections, always wrapped with detail;
// test with errors.Is.
var (
	// ErrConnClosed reports a Send on a connection that is closed.
	ErrConnClosed = errors.New("netloop: connection closed")
	// ErrServerState reports Start on a server that was already started,
	// or any use of a server after Stop.
	ErrServerState = errors.New("netloop: server already started or stopped")
	// ErrBadFrame is the cause passed to Handler.OnClose when the server
	// closed a connection because of an invalid frame.
	ErrBadFrame = errors.New("netloop: bad frame")
)
