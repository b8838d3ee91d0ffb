// Package controllertest runs controller groups for tests: n controllers
// over raft's in-memory transport (raft ids "ctl-0", "ctl-1", ...), each
// behind a real remoting server (netloop) that serves only the controller
// codes (netloop/ctlwire.Serve). No port is picked ahead: a server binds 127.0.0.1:0 and the
// controller reports the address it got; a node restarted on its
// directory keeps its raft id and gets a new remoting address.
package controllertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Node is one controller and its remoting server.
type Node struct {
	Ctl    *controller.Controller
	Server *netloop.Server
	// Dir is the controller's directory, RaftAddr its raft id and
	// in-memory address; NetAddr is its remoting address (set by every
	// start, read it after).
	Dir, RaftAddr, NetAddr string
	trans                  *raft.InmemTransport // nil while stopped
	netAddr                atomic.Pointer[string]
}

// Cluster is a controller group.
type Cluster struct {
	t      testing.TB
	Nodes  []*Node
	peers  []string
	Lease  time.Duration
	Logger zerolog.Logger
}

// Start starts n controllers (lease: the brokers' lease, 0 = default).
// They stop at the test's end.
func Start(t testing.TB, n int, lease time.Duration) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Lease: lease}
	base := t.TempDir()
	for i := 0; i < n; i++ {
		node := &Node{Dir: filepath.Join(base, "n"+strconv.Itoa(i), "controller"), RaftAddr: "ctl-" + strconv.Itoa(i)}
		c.Nodes = append(c.Nodes, node)
		c.peers = append(c.peers, node.RaftAddr)
	}
	t.Cleanup(func() {
		for i := range c.Nodes {
			c.StopNode(i)
		}
	})
	for i := range c.Nodes {
		if err := c.startNode(i); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// StartNode (re)starts node i on its directory and addresses.
func (c *Cluster) StartNode(i int) {
	c.t.Helper()
	if err := c.startNode(i); err != nil {
		c.t.Fatal(err)
	}
}

// startNode starts node i's controller, on a fresh in-memory transport
// connected both ways to the running nodes', and its remoting server.
func (c *Cluster) startNode(i int) error {
	n := c.Nodes[i]
	log := c.Logger.With().Int("node", i).Logger()
	_, trans := raft.NewInmemTransport(raft.ServerAddress(n.RaftAddr))
	for _, o := range c.Nodes {
		if o != n && o.trans != nil {
			trans.Connect(raft.ServerAddress(o.RaftAddr), o.trans)
			o.trans.Connect(raft.ServerAddress(n.RaftAddr), trans)
		}
	}
	n.trans = trans
	ctl, err := controller.Start(controller.Config{Listen: n.RaftAddr, Peers: c.peers, Dir: n.Dir, Lease: c.Lease,
		Transport: trans, RemotingAddr: n.remotingAddr, Logger: log})
	if err != nil {
		c.disconnect(i)
		return fmt.Errorf("start controller %d: %w", i, err)
	}
	srv := netloop.NewServer(netloop.Config{Name: "controller", Addr: "127.0.0.1:0", NumEventLoop: 1, Logger: log}, &handler{ctl: ctl})
	if err := srv.Start(); err != nil {
		_ = ctl.Stop(context.Background())
		c.disconnect(i)
		return fmt.Errorf("start controller %d server: %w", i, err)
	}
	addr := srv.Addr()
	n.netAddr.Store(&addr)
	n.Ctl, n.Server, n.NetAddr = ctl, srv, addr
	return nil
}

// remotingAddr is Config.RemotingAddr: the bound address ("" until then).
func (n *Node) remotingAddr() string {
	if p := n.netAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// disconnect cuts node i's transport off the others (a stopped node:
// RPCs to it fail at once, as to a closed port).
func (c *Cluster) disconnect(i int) {
	n := c.Nodes[i]
	if n.trans == nil {
		return
	}
	for _, o := range c.Nodes {
		if o != n && o.trans != nil {
			o.trans.Disconnect(raft.ServerAddress(n.RaftAddr))
		}
	}
	_ = n.trans.Close()
	n.trans = nil
}

// StopNode stops node i: the controller first (so that the connections
// its server then closes are not taken for dead brokers), then the
// server, then its transport.
func (c *Cluster) StopNode(i int) {
	n := c.Nodes[i]
	if n.Ctl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.Ctl.Stop(ctx); err != nil {
		c.t.Logf("stop controller %d: %v", i, err)
	}
	if err := n.Server.Stop(ctx); err != nil {
		c.t.Logf("stop server %d: %v", i, err)
	}
	c.disconnect(i)
	n.Ctl, n.Server = nil, nil
	n.netAddr.Store(nil)
}

// Addrs are the remoting addresses (what brokers get as Controllers).
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.NetAddr)
	}
	return out
}

// Leader waits (up to d) for a running node that is leader and whose
// address every running node knows, and returns its index.
func (c *Cluster) Leader(d time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for i, n := range c.Nodes {
			if n.Ctl != nil && n.Ctl.IsLeader() && c.allKnow(n.NetAddr) {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no controller leader within %v", d)
	return -1
}

func (c *Cluster) allKnow(addr string) bool {
	for _, n := range c.Nodes {
		if n.Ctl != nil && n.Ctl.LeaderRemotingAddr() != addr {
			return false
		}
	}
	return true
}

// handler serves the controller codes of a remoting port.
type handler struct{ ctl *controller.Controller }

func (h *handler) OnOpen(*netloop.Conn) {}

func (h *handler) OnClose(c *netloop.Conn, _ error) { h.ctl.ConnClosed(c.ID()) }

func (h *handler) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	if cmd.IsResponse() {
		return
	}
	ctlwire.Serve(h.ctl, cmd, c.ID(), func(resp *remoting.Command) { _ = c.Send(resp) })
}
