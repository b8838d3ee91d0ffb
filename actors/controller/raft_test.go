package controller_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop/controllertest"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// invoke sends one request to addr over a fresh connection.
func invoke(t *testing.T, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	c := dial(t, addr)
	defer c.Close()
	return call(t, c, req)
}

// dial opens a connection the test closes at its end.
func dial(t *testing.T, addr string) *remoting.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// call sends one request over c.
func call(t *testing.T, c *remoting.Client, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := c.InvokeWithin(context.Background(), req, 3*time.Second)
	if err != nil {
		t.Fatalf("invoke %d at %s: %v", req.Code, c.Addr(), err)
	}
	return resp
}

func heartbeat(addr string, id int64) *remoting.Command {
	h := controller.Heartbeat{Cluster: "c", BrokerName: "b", BrokerAddr: addr, HAAddr: addr + "-ha", ReplicaID: id}
	return remoting.NewRequest(remoting.BrokerHeartbeat, ctlwire.HeartbeatFields(h), nil)
}

func TestRaftThreeNodesFailoverAndRestart(t *testing.T) {
	cl := controllertest.Start(t, 3, 0)
	l := cl.Leader(10 * time.Second)
	f := (l + 1) % 3

	// A follower names the leader.
	resp := invoke(t, cl.Nodes[f].NetAddr, heartbeat("10.0.0.1:10911", 0))
	if resp.Code != controller.CodeNotLeader || resp.Field(ctlwire.FieldLeaderAddress) != cl.Nodes[l].NetAddr {
		t.Fatalf("follower answered %d %q (leader field %q), want %d naming %s", resp.Code, resp.Remark,
			resp.Field(ctlwire.FieldLeaderAddress), controller.CodeNotLeader, cl.Nodes[l].NetAddr)
	}
	// The leader registers the first broker as master, epoch 1.
	b1, b2 := dial(t, cl.Nodes[l].NetAddr), dial(t, cl.Nodes[l].NetAddr)
	resp = call(t, b1, heartbeat("10.0.0.1:10911", 0))
	a, err := ctlwire.ParseRoleAnswer(resp)
	if resp.Code != 0 || err != nil || a.ReplicaID != 1 || a.MasterID != 1 || a.MasterEpoch != 1 || a.MasterHAAddr != "10.0.0.1:10911-ha" {
		t.Fatalf("first heartbeat: code %d %q %+v %v", resp.Code, resp.Remark, a, err)
	}
	resp = call(t, b2, heartbeat("10.0.0.2:10911", 0))
	if a, _ := ctlwire.ParseRoleAnswer(resp); resp.Code != 0 || a.ReplicaID != 2 || a.MasterID != 1 {
		t.Fatalf("second heartbeat: %d %+v", resp.Code, a)
	}
	// Metadata from any node.
	md := invoke(t, cl.Nodes[f].NetAddr, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
	if md.Code != 0 || md.Field(ctlwire.FieldLeaderAddress) != cl.Nodes[l].NetAddr || md.Field(ctlwire.FieldIsLeader) != "false" {
		t.Fatalf("metadata: %d %v", md.Code, md.ExtFields)
	}

	// Kill the leader: another takes over and knows the group.
	cl.StopNode(l)
	start := time.Now()
	l2 := cl.Leader(10 * time.Second)
	t.Logf("new leader %d after %v", l2, time.Since(start))
	if l2 == l {
		t.Fatal("stopped node is leader")
	}
	g, ok := cl.Nodes[l2].Ctl.Group("c", "b")
	if !ok || len(g.Replicas) != 2 || g.MasterID != 1 {
		t.Fatalf("new leader's group: %+v %v", g, ok)
	}
	// Sync-state data from the new leader (mqadmin getSyncStateSet).
	resp = invoke(t, cl.Nodes[l2].NetAddr, remoting.NewRequest(remoting.ControllerGetSyncStateData, nil, []byte(`["b"]`)))
	var info controller.BrokerReplicasInfo
	if resp.Code != 0 || json.Unmarshal(resp.Body, &info) != nil || info.ReplicasInfoTable["b"].MasterBrokerID != 1 ||
		len(info.ReplicasInfoTable["b"].InSyncReplicas) != 1 || len(info.ReplicasInfoTable["b"].NotInSyncReplicas) != 1 {
		t.Fatalf("sync state data: %d %s", resp.Code, resp.Body)
	}

	// Restart everything from the directories: the state survives.
	for i := range cl.Nodes {
		cl.StopNode(i)
	}
	for i := range cl.Nodes {
		cl.StartNode(i)
	}
	l3 := cl.Leader(10 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, ok = cl.Nodes[l3].Ctl.Group("c", "b")
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !ok || len(g.Replicas) != 2 || g.MasterEpoch != 1 || g.NextID != 3 {
		t.Fatalf("after restart: %+v %v", g, ok)
	}
}
