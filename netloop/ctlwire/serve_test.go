package ctlwire_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/controllertest"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestServeRefusalOrder drives Serve over TCP on a group of three: a
// heartbeat that does not decode is answered CONTROLLER_NOT_LEADER with
// the leader's address by a follower and INVALID_REQUEST by the leader (a
// follower refuses before it looks at the request), a bad configuration
// update INVALID_PARAMETER by any controller, and a code that is not the
// controller's REQUEST_CODE_NOT_SUPPORTED.
func TestServeRefusalOrder(t *testing.T) {
	cl := controllertest.Start(t, 3, 0)
	l := cl.Leader(10 * time.Second)
	f := (l + 1) % 3
	leader, follower := cl.Nodes[l].NetAddr, cl.Nodes[f].NetAddr
	bad := func() *remoting.Command {
		return remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{ctlwire.FieldBrokerName: "b"}, nil)
	}
	if r := invoke(t, follower, bad()); r.Code != controller.CodeNotLeader || r.Field(ctlwire.FieldLeaderAddress) != leader {
		t.Errorf("bad heartbeat to a follower: %d %q %v, want %d naming %s", r.Code, r.Remark, r.ExtFields, controller.CodeNotLeader, leader)
	}
	if r := invoke(t, leader, bad()); r.Code != controller.CodeInvalidRequest || r.Remark != "controller: heartbeat: brokerName and brokerAddr are required" {
		t.Errorf("bad heartbeat to the leader: %d %q", r.Code, r.Remark)
	}
	upd := remoting.NewRequest(remoting.UpdateControllerConfig, nil, []byte("a=\\u12"))
	if r := invoke(t, follower, upd); r.Code != remoting.InvalidParameter || !strings.HasPrefix(r.Remark, "controller: nothing changed: ") {
		t.Errorf("bad update to a follower: %d %q", r.Code, r.Remark)
	}
	if r := invoke(t, follower, remoting.NewRequest(remoting.SendMessage, nil, nil)); r.Code != remoting.RequestCodeNotSupported {
		t.Errorf("SEND_MESSAGE to a controller port: %d %q", r.Code, r.Remark)
	}
	// The group was not changed by any of it.
	if _, ok := cl.Nodes[l].Ctl.Group("", "b"); ok {
		t.Error("a refused heartbeat registered a group")
	}
}

// invoke sends one request to addr over a fresh connection.
func invoke(t *testing.T, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	resp, err := c.InvokeWithin(ctx, req, 3*time.Second)
	if err != nil {
		t.Fatalf("invoke %d at %s: %v", req.Code, addr, err)
	}
	return resp
}
