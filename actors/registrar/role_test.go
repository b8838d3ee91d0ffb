package registrar

import (
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// lastRegistration waits for a REGISTER_BROKER with brokerId id and
// returns its master epoch field.
func (r *recordingNamesrv) waitBrokerID(t *testing.T, id string) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		r.mu.Lock()
		for i := len(r.got) - 1; i >= 0; i-- {
			if c := r.got[i]; c.Code == remoting.RegisterBroker && c.Field("brokerId") == id {
				r.mu.Unlock()
				return strconv.FormatInt(stateVersionOf(t, c), 10)
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no registration with brokerId %s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRoleBrokerID: the registered brokerId follows the role (replica id,
// then 0 once master) with its epoch, at once after a kick.
func TestRoleBrokerID(t *testing.T) {
	ns := startRecording(t)
	h := role.NewHolder(role.State{Kind: role.Replica, BrokerID: 2, ReplicaID: 2, Epoch: 4})
	r := startRegistrarWith(t, func(o *Options) { o.Role, o.Interval = h, time.Hour }, ns.srv.Addr())
	if ep := ns.waitBrokerID(t, "2"); ep != "4" {
		t.Fatalf("replica registration epoch %q, want 4", ep)
	}
	h.Set(role.State{Kind: role.Master, BrokerID: 0, ReplicaID: 2, Epoch: 5})
	began := time.Now()
	r.kicker.Kick()
	if ep := ns.waitBrokerID(t, "0"); ep != "5" {
		t.Fatalf("master registration epoch %q, want 5", ep)
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("re-registered after %s: not at once", d)
	}
}

// TestNoBrokerIDNoRegistration: a replicated broker the controller has not
// answered yet (BrokerID -1) registers nothing; it does once it has an id.
func TestNoBrokerIDNoRegistration(t *testing.T) {
	ns := startRecording(t)
	h := role.NewHolder(role.State{Kind: role.Replica, BrokerID: -1})
	r := startRegistrarWith(t, func(o *Options) { o.Role, o.Interval = h, 50*time.Millisecond }, ns.srv.Addr())
	time.Sleep(300 * time.Millisecond)
	ns.mu.Lock()
	n := len(ns.got)
	ns.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d registrations without a broker id", n)
	}
	h.Set(role.State{Kind: role.Replica, BrokerID: 2, ReplicaID: 2, Epoch: 1})
	r.kicker.Kick()
	if ep := ns.waitBrokerID(t, "2"); ep != "1" {
		t.Fatalf("registration epoch %q, want 1", ep)
	}
}
