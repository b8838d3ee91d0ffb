package netloop

import (
	"errors"
	"fmt"
)

// Errors of the server and its connections, always wrapped with detail;
// test with errors.Is.
var (
	// ErrConnClosed reports a Send on a connection that is closed.
	ErrConnClosed = errors.New("netloop: connection closed")
	// ErrServerState reports Start on a server that was already started,
	// or any use of a server after Stop.
	ErrServerState = errors.New("netloop: server already started or stopped")
	// ErrOutputFull reports a Send on a connection that is being closed
	// because it does not read its answers (its buffered output passed the
	// hard cap, or stayed above the soft cap; see Config.MaxOutput). It
	// wraps ErrConnClosed.
	ErrOutputFull = fmt.Errorf("output cap: %w", ErrConnClosed)
	// ErrBadFrame is the cause passed to Handler.OnClose when the server
	// closed a connection because of an invalid frame.
	ErrBadFrame = errors.New("netloop: bad frame")
	// ErrTransportRefused is the cause passed to Handler.OnClose when the
	// server closed a connection that spoke the transport its port does
	// not take: plaintext under TLSEnforcing, TLS under TLSDisabled.
	ErrTransportRefused = errors.New("netloop: transport refused")
	// ErrIdle is the cause passed to Handler.OnClose when the server closed
	// a connection that sent nothing within Config.IdleTimeout of
	// connecting.
	ErrIdle = errors.New("netloop: connection sent nothing")
)
