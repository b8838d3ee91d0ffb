package processtest

import (
	"testing"

	"github.com/wheelmq/wheelmq/netloop/portres"
)

// ReserveAddr returns a 127.0.0.1 address whose port the test holds until
// it ends (portres.Hold): for a process the test starts, and restarts, on
// a fixed address, which binds it beside the reservation. No other bind or
// connection on the machine can take the port meanwhile.
func ReserveAddr(t testing.TB) string {
	t.Helper()
	return portres.Hold(t)
}
