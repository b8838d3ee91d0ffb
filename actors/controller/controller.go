package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Defaults of Config.
const (
	// DefaultLease is how long a broker stays alive without a heartbeat.
	DefaultLease = 3 * time.Second
	// DefaultScanInterval is how often the leader checks leases.
	DefaultScanInterval = 100 * time.Millisecond
	// DefaultApplyTimeout bounds how long the controller goroutine waits to
	// hand one command to raft (the commit itself is awaited elsewhere).
	DefaultApplyTimeout = 500 * time.Millisecond
	// inboxSize bounds the requests waiting for the controller goroutine;
	// more are answered SYSTEM_BUSY.
	inboxSize = 4096
)

// Config configures a Controller.
type Config struct {
	// Listen is the raft TCP address (--controller-listen); "" = no
	// controller.
	Listen string
	// Advertise is the raft address peers reach this node at (and its
	// raft server id); "" = Listen. It must be one of Peers.
	Advertise string
	// Peers are the raft addresses of every controller
	// (--controller-peers, the same list on every node); empty = only
	// this one. An empty Dir bootstraps the raft group from it.
	Peers []string
	// Dir holds raft.db and snapshots/ (<data>/controller).
	Dir string
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

// Controller is one running controller node.
type Controller struct {
	cfg   Config
	fsm   *FSM
	node  *raftNode
	inbox chan func()
	stop  chan struct{}
	wg    sync.WaitGroup // the loop and every apply waiter
	once  sync.Once
	// Owned by the loop goroutine.
	live *liveness
}

// Start opens the controller's directory, starts raft and the
// controller's goroutine.
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Lease = orDur(cfg.Lease, DefaultLease)
	cfg.ScanInterval = orDur(cfg.ScanInterval, DefaultScanInterval)
	c := &Controller{cfg: cfg, fsm: NewFSM(), inbox: make(chan func(), inboxSize), stop: make(chan struct{})}
	c.live = newLiveness(cfg.Lease)
	node, err := openRaft(&c.cfg, c.fsm)
	if err != nil {
		return nil, err
	}
	c.node = node
	c.wg.Add(1)
	go c.loop()
	cfg.Logger.Info().Str("listen", cfg.Listen).Strs("peers", cfg.peers()).Str("dir", cfg.Dir).Msg("controller started")
	return c, nil
}

// Stop shuts raft down and waits (bounded by ctx) for the controller's
// goroutine and the pending applies, which fail. Later calls do nothing.
func (c *Controller) Stop(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		close(c.stop)
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
	})
	return err
}

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

// Handles reports whether code is a controller request code.
func Handles(code int32) bool {
	for _, c := range ServedCodes {
		if c == code {
			return true
		}
	}
	return false
}

// ServedCodes are the request codes Handle answers.
var ServedCodes = []int32{
	remoting.BrokerHeartbeat, remoting.ControllerAlterSyncStateSet, remoting.ControllerElectMaster,
	remoting.ControllerRegisterBroker, remoting.ControllerGetReplicaInfo, remoting.ControllerGetMetadataInfo,
	remoting.ControllerGetSyncStateData, remoting.GetBrokerEpochCache, remoting.ControllerGetNextBrokerID,
	remoting.ControllerApplyBrokerID,
}

// Handle serves one controller request from connection conn; reply is
// called once with the answer, from the controller's goroutine (unless
// the request is oneway). It never blocks: when the controller is stopped
// or busy the answer is SYSTEM_BUSY at once.
func (c *Controller) Handle(cmd *remoting.Command, conn uint64, reply func(*remoting.Command)) {
	send := func(resp *remoting.Command) {
		if reply != nil && !cmd.IsOneway() {
			reply(resp)
		}
	}
	if !c.post(func() { c.serve(cmd, conn, send) }) {
		send(remoting.NewResponse(cmd, remoting.SystemBusy, "controller busy or stopping"))
	}
}

// ConnClosed tells the controller that a name-server connection closed:
// the brokers heartbeating over it are dead at once.
func (c *Controller) ConnClosed(conn uint64) {
	c.post(func() { c.connClosed(conn) })
}

// post hands fn to the loop without blocking; false when full or stopped.
func (c *Controller) post(fn func()) bool {
	select {
	case <-c.stop:
		return false
	default:
	}
	select {
	case c.inbox <- fn:
		return true
	default:
		return false
	}
}

// loop is the controller's goroutine: requests, applies' outcomes and the
// lease scan, one at a time.
func (c *Controller) loop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case fn := <-c.inbox:
			c.safe(fn)
		case <-t.C:
			c.safe(c.scan)
		}
	}
}

// safe runs fn, logging a panic instead of taking the process down (the
// request it served goes unanswered; the client's timeout answers it).
func (c *Controller) safe(fn func()) {
	defer func() {
		if p := recover(); p != nil {
			c.cfg.Logger.Error().Interface("panic", p).Stack().Msg("controller: request handler panicked")
		}
	}()
	fn()
}

// apply proposes cmd to raft; done runs on the loop with the outcome.
func (c *Controller) apply(cmd Command, done func(Result, error)) {
	data, err := json.Marshal(cmd)
	if err != nil {
		done(Result{}, fmt.Errorf("encode controller command: %w", err))
		return
	}
	f := c.node.r.Apply(data, DefaultApplyTimeout)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var res Result
		err := f.Error()
		if err == nil {
			res, _ = f.Response().(Result)
		}
		fn := func() { done(res, err) }
		select {
		case c.inbox <- fn:
		case <-c.stop:
		}
	}()
}

// notLeader answers a request this follower cannot serve: code
// CONTROLLER_NOT_LEADER (2007), the leader's remoting address in the
// remark and in the controllerLeaderAddress field.
func (c *Controller) notLeader(req *remoting.Command) *remoting.Command {
	addr := c.LeaderRemotingAddr()
	remark := "controller: not the leader; leader unknown (election in progress), retry"
	if addr != "" {
		remark = "controller: not the leader; the leader is " + addr
	}
	resp := remoting.NewResponse(req, CodeNotLeader, remark)
	resp.ExtFields[FieldLeaderAddress] = addr
	return resp
}
