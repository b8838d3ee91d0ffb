package txcheck

import (
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
)

// TestChecksOnlyWhileMaster: a replica (or a fenced master) reads half
// messages but sends no check; once it is an unfenced master it does.
func TestChecksOnlyWhileMaster(t *testing.T) {
	h := role.NewHolder(role.State{Kind: role.Replica, ReplicaID: 2})
	r := newRig(t, "", func(o *Options) {
		o.Timeout, o.CheckInterval, o.MaxChecks = 10*time.Millisecond, 10*time.Millisecond, 100
		o.Role = h
	})
	a := r.sendHalf("PG", "orders", 1, nil)
	r.waitFor("the half message to be read", func() bool { _, ok := r.open()[a.halfOffset]; return ok })
	time.Sleep(100 * time.Millisecond) // ten ticks, every one past the check timeout
	if n := len(r.checkRequests()); n != 0 {
		t.Fatalf("a replica sent %d checks", n)
	}
	h.Set(role.State{Kind: role.Master, ReplicaID: 2, Epoch: 3})
	r.waitFor("the promoted node's first check", func() bool { return len(r.checkRequests()) > 0 })
	h.Set(role.State{Kind: role.Master, ReplicaID: 2, Epoch: 3, Fenced: true})
	time.Sleep(30 * time.Millisecond) // a tick under way may still send one
	n := len(r.checkRequests())
	time.Sleep(100 * time.Millisecond)
	if m := len(r.checkRequests()); m != n {
		t.Fatalf("a fenced master sent %d more checks", m-n)
	}
}
