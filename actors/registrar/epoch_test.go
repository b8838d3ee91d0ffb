package registrar

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestEpochTravelsAsStateVersion: Options.Epoch is sent as the
// registration's DataVersion.StateVersion, read anew for each request.
func TestEpochTravelsAsStateVersion(t *testing.T) {
	ns := startRecording(t)
	var epoch atomic.Int64
	epoch.Store(3)
	startRegistrarWith(t, func(o *Options) { o.Epoch = epoch.Load }, ns.srv.Addr())
	ns.waitRegistrations(t, 1)
	if got := ns.lastStateVersion(t); got != 3 {
		t.Fatalf("stateVersion %d, want 3", got)
	}
	epoch.Store(4)
	ns.closeConns() // re-registers a second later
	ns.waitRegistrations(t, 2)
	if got := ns.lastStateVersion(t); got != 4 {
		t.Fatalf("stateVersion %d after the epoch changed, want 4", got)
	}
}

// lastStateVersion decodes the last REGISTER_BROKER's StateVersion.
func (r *recordingNamesrv) lastStateVersion(t *testing.T) int64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.got) - 1; i >= 0; i-- {
		if r.got[i].Code == remoting.RegisterBroker {
			return stateVersionOf(t, r.got[i])
		}
	}
	t.Fatal("no registration")
	return 0
}

// stateVersionOf decodes a REGISTER_BROKER's DataVersion.StateVersion.
func stateVersionOf(t *testing.T, c *remoting.Command) int64 {
	t.Helper()
	reg := namesrv.NewRegistry()
	if resp := nsrvcodec.Handle(reg, c, time.Now(), 0); resp.Code != remoting.Success {
		t.Fatalf("registration refused: %s", resp.Remark)
	}
	return reg.Brokers()[0].DataVersion.StateVersion
}
