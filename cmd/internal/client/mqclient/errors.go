package mqclient

import "errors"

// Errors of the client instance. They are wrapped with detail; test for them
// with errors.Is.
var (
	// ErrNoNameServer reports a configuration without any name server.
	ErrNoNameServer = errors.New("mqclient: no name server configured")
	// ErrNameServerUnreachable reports a route lookup that no name server
	// answered (each was tried in turn, each with its own deadline).
	ErrNameServerUnreachable = errors.New("mqclient: no name server answered")
	// ErrTopicNotExist reports a topic the name servers do not know (code 17),
	// and, for publishing, that TBW102 could not stand in for it either.
	ErrTopicNotExist = errors.New("mqclient: topic does not exist")
	// ErrNoWritableQueue reports a route without any writable queue on a
	// master broker.
	ErrNoWritableQueue = errors.New("mqclient: no writable queue")
	// ErrBadRoute reports a route body that does not parse.
	ErrBadRoute = errors.New("mqclient: malformed route")
	// ErrClosed reports use of an instance after its last Release.
	ErrClosed = errors.New("mqclient: instance closed")
	// ErrConfigConflict reports an Acquire whose configuration contradicts
	// the instance already running under the same client id.
	ErrConfigConflict = errors.New("mqclient: conflicting configuration for one client id")
	// ErrDuplicateGroup reports a producer group registered twice on one
	// instance.
	ErrDuplicateGroup = errors.New("mqclient: producer group already registered")
)
