package registrar

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestSetGRPCEndpoint: the endpoint set after the stage started is in the
// registration it asks for at once, and in every one after.
func TestSetGRPCEndpoint(t *testing.T) {
	ns := startRecording(t)
	r := startRegistrarWith(t, func(o *Options) { o.Interval = time.Hour }, ns.srv.Addr())
	ns.waitRegistrations(t, 1)
	r.kicker.SetGRPCEndpoint("127.0.0.1:18081")
	ns.waitRegistrations(t, 2)
	ns.mu.Lock()
	var fields []string
	for _, cmd := range ns.got {
		if cmd.Code == remoting.RegisterBroker {
			fields = append(fields, cmd.Field("grpcEndpoint"))
		}
	}
	ns.mu.Unlock()
	if fields[0] != "" || fields[len(fields)-1] != "127.0.0.1:18081" {
		t.Fatalf("grpcEndpoint of the registrations: %q", fields)
	}
}
