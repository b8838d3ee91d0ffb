package portres

import (
	"errors"
	"testing"
)

// Hold reserves a loopback port until the test ends and returns its
// address: for a process the test starts (and restarts) on a fixed
// address, or for "an address nobody serves" (a connection to it is
// refused, and no other test's server can appear there meanwhile). Where
// reservations are not supported the test is skipped.
func Hold(t testing.TB) string {
	t.Helper()
	r, err := Reserve()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r.Addr()
}
