package member_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller/member"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/netloop/controllertest"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// A panic in the heartbeat loop (here: the broker's offset report) is
// recovered, counted, and the loop restarts: the member still becomes
// master, and Stop ends it.
func TestHeartbeatPanicRestartsLoop(t *testing.T) {
	cl := controllertest.Start(t, 1, 0)
	cl.Leader(10 * time.Second)
	var left atomic.Int32
	left.Store(2)
	holder := role.NewHolder(role.State{})
	m, err := member.Start(member.Options{Dial: ctlwire.Dialer(remoting.ClientOptions{}), Controllers: cl.Addrs(), Cluster: "c", BrokerName: "b", BrokerAddr: "10.0.0.9:10911",
		HAAddr: "10.0.0.9:10912", Dir: t.TempDir(), Role: holder, Logger: zerolog.Nop(), HeartbeatInterval: 100 * time.Millisecond,
		MaxOffset: func() int64 {
			if left.Add(-1) >= 0 {
				panic("offset report exploded")
			}
			return 100
		}})
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{m: m, role: holder}
	t.Cleanup(func() { b.stop(t) })
	waitRole(t, b, 10*time.Second, "master after the heartbeat loop's panics", isMaster)
	if got := m.Panics(); got != 2 {
		t.Fatalf("Panics() = %d, want 2", got)
	}
}
