package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Defaults of Config.
const (
	// DefaultLease is how long a broker stays alive without a heartbeat.
	DefaultLease = 3 * time.Second
	// DefaultScanInterval is how often the leader checks leases.
	DefaultScanInterval = 100 * time.Millisecond
	// DefaultApplyTimeout bounds how long the controller's stage waits to
	// hand one command to raft (the commit itself is awaited elsewhere).
	DefaultApplyTimeout = 500 * time.Millisecond
	// inboxSize bounds the messages waiting for the controller's stage
	// (its mailbox depth); more requests are answered SYSTEM_BUSY.
	inboxSize = 4096
)

// Config configures a Controller.
type Config struct {
	// Listen is the raft TCP address (--controller-listen); "" = no
	// controller. With Transport set it is only this node's raft address
	// (Advertise's default).
	Listen string
	// ListenFunc opens the raft listener (nil: net.Listen), e.g. one that
	// sets SO_REUSEPORT, or hands out a listener the caller opened
	// already. Unused with Transport.
	ListenFunc func(network, address string) (net.Listener, error)
	// Transport, when set, is the raft transport (raft.NewInmemTransport
	// in unit tests) instead of TCP on Listen; it stays the caller's (Stop
	// does not close it) and Security does not apply to it.
	Transport raft.Transport
	// Security says what protects the raft port (raftsec.go,
	// docs/controller.md "The raft port").
	Security RaftSecurity
	// Advertise is the raft address peers reach this node at (and its
	// raft server id); "" = Listen. It must be one of Peers.
	Advertise string
	// Peers are the raft addresses of every controller
	// (--controller-peers, the same list on every node); empty = only
	// this one. An empty Dir bootstraps the raft group from it.
	Peers []string
	// Dir holds the raft log, stable store and snapshots
	// (<data>/controller; docs/controller.md).
	Dir string
	// FS is the file system of Dir (vfs.OS when nil; tests pass
	// crashfs). An earlier version's raft.db is read from the OS.
	FS vfs.FS
	// RemotingAddr returns this name server's remoting address, which
	// followers name as the leader's and GET_METADATA_INFO shows; nil or
	// "" leaves it unknown.
	RemotingAddr func() string
	// Logger receives elections, refusals and raft's warnings.
	Logger zerolog.Logger
	// Lease is how long a broker stays alive without heartbeat
	// (DefaultLease when 0).
	Lease time.Duration
	// ScanInterval is the lease check period (DefaultScanInterval).
	ScanInterval time.Duration
	// Raft timings; 0 = the Default* above.
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// System is the actor system the controller's stage runs in (the
	// name server's); nil: Start makes one and Stop shuts it down.
	System *actor.ActorSystem
	// Stages is the registry the stage is spawned in (its metrics
	// wheelmq_actor_*{stage="controller"} and health); nil: a registry of
	// the controller's own, registered with no Prometheus registerer.
	Stages *stage.Registry
}

func (c *Config) advertise() string {
	if c.Advertise != "" {
		return c.Advertise
	}
	return c.Listen
}

func (c *Config) peers() []string {
	if len(c.Peers) == 0 {
		return []string{c.advertise()}
	}
	return c.Peers
}

// ParsePeers splits a --controller-peers value ("h1:p1;h2:p2", commas
// accepted too) into addresses.
func ParsePeers(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

// Controller is one running controller node. Its requests, the outcomes of
// its raft applies and its lease scan are served one at a time by its
// supervised stage (StageName, stage.go); hashicorp/raft runs its own
// goroutines.
type Controller struct {
	cfg       Config
	fsm       *FSM
	node      *raftNode
	system    *actor.ActorSystem
	ownSystem bool // system was made by Start: Stop shuts it down
	st        atomic.Pointer[stage.Stage]
	once      sync.Once
	mu        sync.Mutex
	closed    atomic.Bool                   // Stop began; set under mu
	wg        sync.WaitGroup                // every apply waiter; Add under mu while !closed
	panicHook atomic.Pointer[func(msg any)] // test hook: called before a request or an apply outcome is handled
	secMode   string                        // what protects the raft port (Security* constants)
	// Owned by the stage: rebuilt by every (re)start of its actor.
	live *liveness
}

// RaftSecurityMode says what protects the raft port: SecurityMTLSSecret,
// SecurityMTLS, SecuritySecret, SecurityLoopback (none, loopback only),
// SecurityInsecure (none, allowed by RaftSecurity.Insecure) or
// SecurityExternal (Config.Transport).
func (c *Controller) RaftSecurityMode() string { return c.secMode }

// RaftAddr is this node's raft address (and server id).
func (c *Controller) RaftAddr() string { return c.cfg.advertise() }

// RaftRefused counts the raft connections refused since Start (accepted
// ones that failed authentication, and dialed ones whose peer did).
func (c *Controller) RaftRefused() int64 {
	if c.node.layer == nil {
		return 0
	}
	return c.node.layer.refused.Load()
}

// Start opens the controller's directory, starts raft and spawns the
// controller's stage.
func Start(cfg Config) (*Controller, error) {
	if cfg.Listen == "" {
		return nil, errors.New("controller: no listen address")
	}
	if cfg.Dir == "" {
		return nil, errors.New("controller: no directory")
	}
	found := false
	for _, p := range cfg.peers() {
		found = found || p == cfg.advertise()
	}
	if !found {
		return nil, fmt.Errorf("controller: %s is not in the peer list %v", cfg.advertise(), cfg.peers())
	}
	secMode := SecurityExternal
	if cfg.Transport == nil {
		var err error
		if secMode, err = cfg.Security.validate(cfg.Listen); err != nil {
			return nil, err
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Lease = orDur(cfg.Lease, DefaultLease)
	cfg.ScanInterval = orDur(cfg.ScanInterval, DefaultScanInterval)
	c := &Controller{cfg: cfg, fsm: NewFSM(), system: cfg.System}
	node, err := openRaft(&c.cfg, c.fsm)
	if err != nil {
		return nil, err
	}
	c.node = node
	if err := c.spawn(); err != nil {
		_ = node.close()
		return nil, err
	}
	c.secMode = secMode
	switch secMode {
	case SecurityInsecure:
		cfg.Logger.Warn().Str("listen", cfg.Listen).
			Msg("controller: the raft port is unauthenticated (--controller-insecure): anyone who reaches it can elect masters and stop writes")
	case SecurityLoopback:
		cfg.Logger.Warn().Str("listen", cfg.Listen).
			Msg("controller: the raft port is unauthenticated (loopback only): any local process can reach it; give --controller-secret-file")
	}
	cfg.Logger.Info().Str("listen", cfg.Listen).Strs("peers", cfg.peers()).Str("dir", cfg.Dir).Str("raft_security", secMode).Msg("controller started")
	return c, nil
}

// Stop shuts raft down, waits (bounded by ctx) for the pending applies,
// whose failures the stage answers, then stops the stage. Later calls do
// nothing.
func (c *Controller) Stop(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		c.mu.Lock()
		c.closed.Store(true)
		c.mu.Unlock()
		// Raft first: its shutdown fails the futures the apply waiters
		// wait on, so that they end.
		err = c.node.close()
		done := make(chan struct{})
		go func() { c.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = errors.Join(err, fmt.Errorf("controller stop: %w", ctx.Err()))
		}
		if st := c.st.Load(); st != nil {
			if serr := st.StopWithin(ctx); serr != nil {
				err = errors.Join(err, fmt.Errorf("controller stop: %w", serr))
			}
		}
		if c.ownSystem {
			c.system.Shutdown()
		}
	})
	return err
}

// stopping reports whether Stop began; it never blocks (Handle calls it
// on the network event loop).
func (c *Controller) stopping() bool { return c.closed.Load() }

// IsLeader reports whether this node is the raft leader.
func (c *Controller) IsLeader() bool { return c.node.r.State() == raft.Leader }

// LeaderRemotingAddr is the leader's name-server address as the
// replicated peer table knows it ("" when unknown).
func (c *Controller) LeaderRemotingAddr() string {
	_, id := c.node.r.LeaderWithID()
	if id == "" {
		return ""
	}
	var addr string
	c.fsm.View(func(s *State) { addr = s.Peers[string(id)] })
	return addr
}

// MasterEpoch returns the master epoch the controller applied for a group
// (false: unknown group). Safe from any goroutine.
func (c *Controller) MasterEpoch(cluster, brokerName string) (int64, bool) {
	var epoch int64
	var ok bool
	c.fsm.View(func(s *State) {
		var g Group
		if g, ok = s.Group(cluster, brokerName); ok {
			epoch = g.MasterEpoch
		}
	})
	return epoch, ok
}

// Group returns a copy of a group's record (false: unknown).
func (c *Controller) Group(cluster, brokerName string) (Group, bool) {
	var g Group
	var ok bool
	c.fsm.View(func(s *State) { g, ok = s.Group(cluster, brokerName) })
	return g, ok
}

// Handle serves one controller request from connection conn; reply is
// called once with the answer, from the controller's stage (nil: the
// answer is dropped, as a oneway request's). It never blocks: when the
// controller is stopped or busy the answer is SYSTEM_BUSY at once; when
// the stage fails while serving the request (a panic), the answer is
// SYSTEM_ERROR.
func (c *Controller) Handle(req Request, conn uint64, reply func(Answer)) {
	r := &request{req: req, conn: conn, reply: reply}
	st := c.st.Load()
	if st == nil || c.stopping() || st.Stopped() {
		r.send(refuse(wirecode.SystemBusy, "controller stopping"))
		return
	}
	if st.Depth() >= inboxSize {
		r.send(refuse(wirecode.SystemBusy, "controller busy"))
		return
	}
	st.Send(r)
}

// ConnClosed tells the controller that a name-server connection closed:
// the brokers heartbeating over it are dead at once.
func (c *Controller) ConnClosed(conn uint64) {
	if st := c.st.Load(); st != nil && !c.stopping() {
		st.Send(connClosed{conn: conn})
	}
}

// apply proposes cmd to raft for req (nil: the controller's own command);
// done runs on the stage with the outcome, as an applied message, so that
// a panic in it answers req with an error.
func (c *Controller) apply(cmd Command, req *request, done func(Result, error)) {
	data, err := json.Marshal(cmd)
	if err != nil {
		done(Result{}, fmt.Errorf("encode controller command: %w", err))
		return
	}
	// The waiter is counted before Stop can start waiting (mu orders the
	// Add against Stop's closed flag); raft is asked outside the lock, as
	// Apply may wait up to DefaultApplyTimeout.
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		done(Result{}, fmt.Errorf("controller stopping: %w", raft.ErrRaftShutdown))
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	f := c.node.r.Apply(data, DefaultApplyTimeout)
	st := c.st.Load()
	// The waiter only bridges raft's future to the stage: the outcome is
	// handled there.
	go func() {
		defer c.wg.Done()
		m := &applied{req: req, done: done}
		if p := recovery.Catch(func() {
			if m.err = f.Error(); m.err == nil {
				m.res, _ = f.Response().(Result)
			}
		}); p != nil {
			recovery.Log(c.cfg.Logger, p, "controller apply waiter")
			m.err = fmt.Errorf("controller apply: %w", p)
		}
		st.Send(m)
	}()
}

// notLeader answers a request this follower cannot serve: code
// CONTROLLER_NOT_LEADER (2007), the leader's remoting address in the
// remark and in the result.
func (c *Controller) notLeader() Answer {
	addr := c.LeaderRemotingAddr()
	remark := "controller: not the leader; leader unknown (election in progress), retry"
	if addr != "" {
		remark = "controller: not the leader; the leader is " + addr
	}
	return Answer{Code: CodeNotLeader, Remark: remark, Result: NotLeader{LeaderAddr: addr}}
}
