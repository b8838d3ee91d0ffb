// Package controllertest runs controller groups for tests: n controllers
// over real raft TCP, each behind a real remoting server (netloop) that
// serves only the controller codes, with fixed ports so that a node
// restarted on its directory comes back at the same addresses.
package controllertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Node is one controller and its remoting server.
type Node struct {
	Ctl                    *controller.Controller
	Server                 *netloop.Server
	Dir, RaftAddr, NetAddr string
}

// Cluster is a controller group.
type Cluster struct {
	t      testing.TB
	Nodes  []*Node
	peers  []string
	Lease  time.Duration
	Logger zerolog.Logger
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Start starts n controllers (lease: the brokers' lease, 0 = default).
// They stop at the test's end.
func Start(t testing.TB, n int, lease time.Duration) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Lease: lease}
	base := t.TempDir()
	for i := 0; i < n; i++ {
		node := &Node{Dir: filepath.Join(base, "n"+strconv.Itoa(i), "controller"), RaftAddr: FreeAddr(t), NetAddr: FreeAddr(t)}
		c.Nodes = append(c.Nodes, node)
		c.peers = append(c.peers, node.RaftAddr)
	}
	for i := range c.Nodes {
		// The remoting address is only this node's (not in peers): if
		// another process took it since FreeAddr, take another one.
		err := c.startNode(i)
		for try := 0; err != nil && errors.Is(err, syscall.EADDRINUSE) && try < 5; try++ {
			c.Nodes[i].NetAddr = FreeAddr(t)
			err = c.startNode(i)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range c.Nodes {
			c.StopNode(i)
		}
	})
	return c
}

// StartNode (re)starts node i on its directory and addresses.
func (c *Cluster) StartNode(i int) {
	c.t.Helper()
	if err := c.startNode(i); err != nil {
		c.t.Fatal(err)
	}
}

// startNode starts node i's controller and its remoting server.
func (c *Cluster) startNode(i int) error {
	n := c.Nodes[i]
	log := c.Logger.With().Int("node", i).Logger()
	ctl, err := controller.Start(controller.Config{Listen: n.RaftAddr, Peers: c.peers, Dir: n.Dir, Lease: c.Lease,
		RemotingAddr: func() string { return n.NetAddr }, Logger: log})
	if err != nil {
		return fmt.Errorf("start controller %d: %w", i, err)
	}
	srv := netloop.NewServer(netloop.Config{Name: "controller", Addr: n.NetAddr, NumEventLoop: 1, Logger: log}, &handler{ctl: ctl})
	if err := srv.Start(); err != nil {
		_ = ctl.Stop(context.Background())
		return fmt.Errorf("start controller %d server: %w", i, err)
	}
	n.Ctl, n.Server = ctl, srv
	return nil
}

// StopNode stops node i: the controller first (so that the connections
// its server then closes are not taken for dead brokers), then the server.
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
	n.Ctl, n.Server = nil, nil
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
	if !controller.Handles(cmd.Code) {
		_ = c.Send(remoting.NewResponse(cmd, remoting.RequestCodeNotSupported, "not a controller code"))
		return
	}
	h.ctl.Handle(cmd, c.ID(), func(resp *remoting.Command) { _ = c.Send(resp) })
}
