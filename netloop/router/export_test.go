package router

import (
	"testing"

	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ServePanics makes the routers built (New) until the test ends serve code
// with a handler that panics with value: the seam of the panic tests,
// reachable from tests only. handlers is the package's table, so the test
// must not be parallel.
func ServePanics(t testing.TB, code int32, value any) {
	t.Helper()
	if _, ok := handlers[code]; ok {
		t.Fatalf("request code %d is served already", code)
	}
	handlers[code] = handler{serve: func(*Router, *netloop.Conn, *remoting.Command) *Refusal { panic(value) }}
	t.Cleanup(func() { delete(handlers, code) })
}
