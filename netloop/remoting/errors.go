package remoting

import "errors"

// Errors returned by the codec and the client. They are always wrapped with
// detail; test for them with errors.Is.
var (
	// ErrMalformed reports bytes that are not a valid RemotingCommand frame
	// or header: a short frame, an inconsistent header length, an unknown
	// serialize type, a header that does not parse, or a command that
	// cannot be represented in the requested header encoding.
	ErrMalformed = errors.New("remoting: malformed command")

	// ErrFrameTooLarge reports a frame whose length exceeds the configured
	// maximum, or a header longer than the 24 bits the header-length word
	// can express.
	ErrFrameTooLarge = errors.New("remoting: frame too large")

	// ErrClosed reports an operation on a Client whose connection is gone.
	ErrClosed = errors.New("remoting: connection closed")

	// ErrTimeout reports a request sent with Client.Go that got no response
	// within its timeout. Such errors also match context.DeadlineExceeded.
	ErrTimeout = errors.New("remoting: request timed out")
)

// Causes reported by the JSON header scanner. decodeJSONHeader wraps them
// together with ErrMalformed and the offset, so callers only need
// ErrMalformed.
var (
	errJSONSyntax = errors.New("invalid JSON")
	errJSONType   = errors.New("JSON value of the wrong type")
	errJSONDepth  = errors.New("JSON nested too deeply")
)
