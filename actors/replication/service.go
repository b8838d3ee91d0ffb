// Package replication streams the CommitLog byte for byte from a master to
// its replicas (issue 17, "controller mode, strict", data path) and computes
// the confirmed offset: the end of what every sync-state-set member holds.
//
// # Roles
//
// The Service follows a role.Holder. As Master its ha-sender stage serves
// the HA listener: each replica connection gets a sender that reads the
// CommitLog from the replica's end (commitlog.ReadRaw) and streams
// ha.Transfer frames, woken by Appended, and an ack reader. As Replica its
// ha-receiver stage follows State.MasterHAAddr: handshake, truncate to the
// consistent point (commitlog.Truncate, then Options.OnTruncate), append
// frames with commitlog.AppendRaw, fsync once per burst under FlushSync and
// acknowledge. Standalone both idle and Confirmed is the local durable end.
//
// # Authentication
//
// Every connection opens with both ends proving the group's secret
// (Options.Secret) over fresh nonces, before any frame (auth.go; stream
// version 2): the master tells nothing of its log to an unproven peer (one
// fixed refusal, ha.Refusal), and a replica sends its log position to,
// and takes frames from, only the master that proved the secret and the
// HA address the controller named (and, with VerifyMaster, a certificate
// the process trusts).
//
// # Confirmed offset
//
// On the master Confirmed is the minimum over the sync-state set of what
// each member acknowledged, the master itself counted with its own durable
// end: the flushed offset under FlushSync, the CommitLog end otherwise.
// With --flush async "holds every acknowledged byte" therefore means "has
// it in its page cache": a process crash of any member loses nothing
// acknowledged, a power cut of one member loses nothing the others hold,
// but a power cut of every member at once can. A replica's Confirmed is
// min(the master's confirmed offset, its own durable end). Both never
// decrease while the service runs.
//
// # Stages
//
// The sender (SenderStageName, "ha-sender"; only with a listener) and the
// receiver (ReceiverStageName, "ha-receiver") are supervised stages of
// actors/stage, spawned in Options.Stages (their wheelmq_actor_* metrics,
// restart count and health are the broker's). The HA port is a plain
// net.Listener (a byte stream between brokers, not the client event
// loop), and the blocking network I/O runs on goroutines, but each is
// owned by a stage's actor instance: started in Started, stopped (its
// connection closed, waited for) in Stopping and Restarting. A failure of
// the stream is sent to the actor, which panics with it, and its
// supervisor (50 ms doubling to 2 s; only a failed or corrupt CommitLog
// stops it for good) restarts it:
//
//   - the receiver fails on a refused handshake, a broken connection, a bad
//     frame or an append error (a dial that fails is retried in place); the
//     new instance resumes from the CommitLog end, so no byte is written
//     twice or skipped (AppendRaw accepts bytes only at the end);
//   - the sender fails when the master's side does (reading its CommitLog,
//     the listener); the new instance keeps the port, the replicas
//     reconnect and each is streamed from the end it acknowledges in its
//     handshake. A connection the replica breaks, or a bad ack, ends that
//     connection only.
//
// The role watcher and the master's housekeeping tick run on one goroutine
// owned by the Service; Stop stops the stages and it.
package replication

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// Defaults for Options.
const (
	DefaultLagTimeout        = 3 * time.Second
	DefaultHeartbeatInterval = 500 * time.Millisecond
	DefaultBatchBytes        = 1 << 20
)

// Options configures Start.
type Options struct {
	// Store is the broker's data directory (its CommitLog is streamed).
	Store *storage.Store
	// Listen is the HA listen address (--ha-listen); empty: no listener
	// (a broker that is never master).
	Listen string
	// Advertise is the HA address replicas dial (--ha-advertise); empty:
	// the listener's address.
	Advertise string
	// TLS, when set, wraps both ends: the listener serves with it and the
	// follower dials with it (unless DialTLS is set).
	TLS *tls.Config
	// DialTLS, when set, is the follower's TLS configuration instead of
	// TLS (a server's configuration holds its certificate, a client's how
	// it checks the server's); it takes effect only with TLS set.
	DialTLS *tls.Config
	// VerifyMaster, when set, checks the master's TLS connection (its
	// certificate) for the HA address dialed, before the challenge; it
	// takes effect only with TLS set.
	VerifyMaster func(cs tls.ConnectionState, addr string) error
	// Group names the replicated group ("cluster/brokerName"): both ends
	// prove it with the secret (auth.go).
	Group string
	// Secret is the group's HA secret, proven by both ends of every
	// connection (auth.go); every member has the same. Empty: the
	// challenge runs with an empty key, which keeps out no one who knows
	// the protocol (the process allows that only on loopback or when told
	// to).
	Secret []byte
	// Role is the broker's role; nil is standalone.
	Role *role.Holder
	// Epochs is the data directory's epoch file (<data>/ha/epochs).
	Epochs *ha.Epochs
	// FlushSync: a replica fsyncs before acknowledging and the master
	// counts its flushed offset (--flush sync).
	FlushSync bool
	// MinInSync is the smallest sync-state set (master included) that may
	// acknowledge sends; WaitConfirmed fails below it. 0 or 1: no minimum.
	MinInSync int
	// LagTimeout is how long a member may stay behind before the master
	// proposes to drop it from the sync-state set (default 3 s).
	LagTimeout time.Duration
	// HeartbeatInterval is the idle interval between heartbeat frames and
	// acks (default 500 ms); a peer silent for 6 intervals is dropped.
	HeartbeatInterval time.Duration
	// BatchBytes bounds a transfer frame's body (default 1 MiB).
	BatchBytes int
	// Logger receives connection and protocol events.
	Logger zerolog.Logger
	// StartConfirmed is the confirmed offset known at start (for example
	// the persisted dispatch position, which never passes it); 0 when
	// unknown. A master or replica starts from min(it, log end) until its
	// peers report, never from its own log end: bytes a restarted node
	// holds may never have been confirmed. Ignored when standalone.
	StartConfirmed int64
	// OnAppended (replica) is called after new bytes are in the log, with
	// the new end (kick the dispatcher).
	OnAppended func(end int64)
	// OnTruncate (replica) is called after the CommitLog was cut back to
	// offset (consistent point): cut the consume queues past it.
	OnTruncate func(offset int64)
	// Stages is the broker's stage registry (wheelmq_actor_* metrics,
	// health): the sender and receiver stages are spawned there; nil: a
	// private registry, not exported.
	Stages *stage.Registry
	// Retire is the supervisor's hook for a stage stopped for good (the
	// pipeline's, which logs it and turns the broker unhealthy); nil:
	// Stages.Retire.
	Retire func(id string, reason any) bool
	// OnSyncStateSetChange (master) receives a proposed sync-state set
	// when a member lags (shrink) or a replica caught up (expand); the
	// caller hands it to the controller (member.ProposeSyncStateSet). It
	// must not block.
	OnSyncStateSetChange func(proposed []int64)
}

// ReplicaStatus is one replica as the master sees it (metrics, admin).
type ReplicaStatus struct {
	ReplicaID int64
	Addr      string
	Acked     int64
	LagBytes  int64
	InSync    bool
	Connected bool
}

// Service is the running replication stream of one broker.
type Service struct {
	o      Options
	system *actor.ActorSystem
	log    zerolog.Logger
	ln     net.Listener
	tcp    *net.TCPListener // ln's TCP listener (its deadline unblocks Accept)

	advertise atomic.Pointer[string] // SetAdvertise's address

	refusals   atomic.Int64 // connections refused before authentication
	refusedLog atomic.Int64 // unix nanos of the last refusal logged

	sender   *stage.Stage // nil without a listener
	receiver *stage.Stage
	gen      atomic.Int64 // generations of stage instances and streams
	faults   faults

	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
	kick    chan struct{} // role changed

	confirmed atomic.Int64

	mu      sync.Mutex
	cur     role.State
	waiters waitHeap
	members map[int64]*peer // master side: replica id -> state, kept across reconnects
	conns   map[net.Conn]struct{}
	// masterConfirmed is, on a replica, the master's confirmed offset.
	masterConfirmed int64
	// follow is what the receiver follows (replica with a master).
	follow     target
	proposed   []int64
	proposedAt time.Time

	wake struct {
		sync.Mutex
		ch chan struct{}
	}
}

// ErrStopped is returned by operations after Stop.
var ErrStopped = errors.New("replication: stopped")

// Start starts the service: the HA listener (when Options.Listen is set),
// the sender and receiver stages on system, and the role watcher.
func Start(system *actor.ActorSystem, o Options) (*Service, error) {
	if o.Store == nil || o.Epochs == nil {
		return nil, fmt.Errorf("replication start: Store and Epochs are required")
	}
	if o.LagTimeout <= 0 {
		o.LagTimeout = DefaultLagTimeout
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.Stages == nil {
		o.Stages = stage.NewRegistry(nil)
	}
	s := &Service{
		o: o, system: system, log: o.Logger.With().Str("component", "replication").Logger(),
		stop: make(chan struct{}), kick: make(chan struct{}, 1),
		members: map[int64]*peer{}, conns: map[net.Conn]struct{}{},
	}
	s.wake.ch = make(chan struct{})
	s.cur = o.Role.Get()
	if s.cur.Kind == role.Master {
		s.resetMembersLocked(s.cur)
	}
	if s.cur.Kind == role.Standalone {
		s.confirmed.Store(s.localDurable())
	} else {
		s.confirmed.Store(max(0, min(o.StartConfirmed, s.localDurable())))
	}
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return nil, fmt.Errorf("replication listen %s: %w", o.Listen, err)
		}
		s.tcp, _ = ln.(*net.TCPListener)
		if o.TLS != nil {
			ln = tls.NewListener(ln, o.TLS)
		}
		s.ln = ln
	}
	if err := s.spawnStages(); err != nil {
		s.stopStages(context.Background())
		if s.ln != nil {
			_ = s.ln.Close()
		}
		return nil, err
	}
	if o.Role != nil {
		o.Role.Subscribe(func(_, _ role.State) {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		})
	}
	s.wg.Add(1)
	go s.run()
	return s, nil
}

// SetAdvertise sets the HA address published to the controller (what
// replicas dial), when it is known only after Start: the master proves it
// in every handshake.
func (s *Service) SetAdvertise(addr string) { s.advertise.Store(&addr) }

// Addr returns the address replicas dial: SetAdvertise's, Advertise, or
// the listener's.
func (s *Service) Addr() string {
	if p := s.advertise.Load(); p != nil {
		return *p
	}
	if s.o.Advertise != "" {
		return s.o.Advertise
	}
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return ""
}

// Stop stops every goroutine and closes every connection; pending
// WaitConfirmed calls get done(false).
func (s *Service) Stop(ctx context.Context) error {
	s.stopped.Do(func() { close(s.stop) })
	err := s.stopStages(ctx)
	if s.ln != nil {
		_ = s.ln.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("replication stop: %w", ctx.Err())
	}
	s.failWaiters()
	if err != nil {
		return fmt.Errorf("replication stop: %w", err)
	}
	return nil
}

// stopStages stops the sender and the receiver (each closes its
// connections and waits for its goroutines).
func (s *Service) stopStages(ctx context.Context) error {
	var errs []error
	for _, st := range []*stage.Stage{s.sender, s.receiver} {
		if st != nil {
			errs = append(errs, st.StopWithin(ctx))
		}
	}
	return errors.Join(errs...)
}

// run follows the role: it points the receiver at the master and fails
// the waiters when the broker stops being an unfenced master; it also runs
// the master's housekeeping tick (confirmed offset, lag, sync-state set).
func (s *Service) run() {
	defer s.wg.Done()
	tick := time.NewTicker(min(s.o.LagTimeout/4, 50*time.Millisecond))
	defer tick.Stop()
	apply := func() {
		st := s.o.Role.Get()
		var t target
		if st.Kind == role.Replica && st.MasterHAAddr != "" {
			t = target{addr: st.MasterHAAddr, epoch: st.Epoch}
		}
		s.mu.Lock()
		old := s.cur
		s.cur = st
		retarget := s.follow != t
		s.follow = t
		s.mu.Unlock()
		changedMaster := old.Kind != st.Kind || old.Epoch != st.Epoch
		if changedMaster && old.Kind == role.Master {
			s.dropConns() // replicas reconnect and handshake at the new epoch
		}
		if changedMaster && st.Kind == role.Master {
			s.mu.Lock()
			s.resetMembersLocked(st)
			s.mu.Unlock()
		}
		if !st.IsMaster() || changedMaster || (st.Kind == role.Master && syncStateSize(st) < s.o.MinInSync) {
			s.failWaiters()
		}
		if retarget {
			s.receiver.Send(retargetMsg)
		}
		s.advance()
	}
	s.round("apply", apply)
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
			s.round("apply", apply)
		case <-tick.C:
			s.round("housekeeping", func() {
				s.advance()
				s.housekeep()
			})
		}
	}
}

// retargetMsg is the receiver's retarget, wrapped once.
var retargetMsg = stage.Prewrapped(retarget{})

// role returns the role the service last applied.
func (s *Service) role() role.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// localDurable is this broker's own durable CommitLog end.
func (s *Service) localDurable() int64 {
	if s.o.FlushSync {
		return s.o.Store.CommitLog.FlushedOffset()
	}
	return s.o.Store.CommitLog.MaxOffset()
}

// Confirmed returns the confirmed offset (see the package documentation).
// Safe from any goroutine.
func (s *Service) Confirmed() int64 { return s.confirmed.Load() }

// DurableEnd implements storage.DurableEnd with Confirmed.
func (s *Service) DurableEnd() int64 { return s.Confirmed() }

var _ storage.DurableEnd = (*Service)(nil)

// Appended tells the master's senders that the CommitLog grew to end (the
// writer calls it after each append; under sync flush both before its
// fsync, so the replicas receive the batch meanwhile, and after it, so
// the confirmed offset follows the flushed one). Cheap and non-blocking.
func (s *Service) Appended(end int64) {
	_ = end
	s.wake.Lock()
	close(s.wake.ch)
	s.wake.ch = make(chan struct{})
	s.wake.Unlock()
	s.advance()
}

// woken returns a channel closed by the next Appended.
func (s *Service) woken() <-chan struct{} {
	s.wake.Lock()
	defer s.wake.Unlock()
	return s.wake.ch
}

// advance recomputes Confirmed and releases the waiters it covers.
func (s *Service) advance() {
	s.mu.Lock()
	c := s.computeLocked()
	if c > s.confirmed.Load() {
		s.confirmed.Store(c)
	}
	c = s.confirmed.Load()
	var done []func(bool)
	for len(s.waiters) > 0 && s.waiters[0].end <= c {
		done = append(done, s.waiters.pop().done)
	}
	s.mu.Unlock()
	for _, d := range done {
		d(true)
	}
}

// computeLocked is the confirmed offset from the current state. s.mu held.
func (s *Service) computeLocked() int64 {
	own := s.localDurable()
	switch s.cur.Kind {
	case role.Master:
		c := own
		for _, id := range s.cur.SyncStateSet {
			if id == s.cur.ReplicaID {
				continue
			}
			p := s.members[id]
			if p == nil || !p.known {
				return s.confirmed.Load() // a member not heard from: keep the old value
			}
			c = min(c, p.acked)
		}
		return c
	case role.Replica:
		return min(s.masterConfirmed, own)
	default:
		return own
	}
}

// syncStateSize is the sync-state set's size counting the master.
func syncStateSize(st role.State) int {
	n := len(st.SyncStateSet)
	if !slices.Contains(st.SyncStateSet, st.ReplicaID) {
		n++
	}
	return n
}
