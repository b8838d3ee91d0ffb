package replication

import (
	"fmt"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

// The service's goroutines (housekeeping, the listener, one per replica
// connection and its ack reader, the replica's stream) recover their
// panics: housekeeping logs it and runs its next round; the others end
// with the panic as their error, which their owner (the sender or
// receiver actor, or the connection's sender loop) handles as any other
// failure of the connection: it is closed and the replica reconnects.

// round runs one round of housekeeping; a panic ends the round only.
func (s *Service) round(kind string, f func()) {
	if p := recovery.Catch(f); p != nil {
		recovery.Log(s.log, p, "replication "+kind)
	}
}

// catchErr runs f on the calling goroutine and returns its error, or its
// panic as one (logged with the stack).
func (s *Service) catchErr(kind string, f func() error) (err error) {
	if p := recovery.Catch(func() { err = f() }); p != nil {
		recovery.Log(s.log, p, "replication "+kind)
		return fmt.Errorf("replication %s: %w", kind, p)
	}
	return err
}
