// Package member is a broker's side of the controller (actors/controller):
// it heartbeats the controller leader every HeartbeatInterval over one
// kept connection (its close tells the controller the broker died), learns
// its replica id, role, master epoch and sync-state set from every answer
// and writes them into the broker's role.Holder, fences a master that
// could not renew its lease within FenceAfter, and proposes sync-state set
// changes for the replication service. It talks to every controller (the
// name servers) and follows CONTROLLER_NOT_LEADER answers to the leader.
package member

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// Defaults of Options.
const (
	DefaultHeartbeatInterval = 500 * time.Millisecond
	DefaultLease             = 3 * time.Second
	DefaultFenceAfter        = 2500 * time.Millisecond
	// ReplicaIDFile is the replica id's file under <Dir>/ha.
	ReplicaIDFile = "replica-id"
)

// Options configure a Member.
type Options struct {
	// Controllers are the name servers' remoting addresses.
	Controllers []string
	// Cluster, BrokerName: the broker group; BrokerAddr, HAAddr: this
	// broker's remoting and replication addresses.
	Cluster, BrokerName, BrokerAddr, HAAddr string
	// Dir is the broker's data directory: the replica id is kept in
	// <Dir>/ha/replica-id.
	Dir string
	// Role receives every change the controller tells (required).
	Role *role.Holder
	// MaxOffset and Confirmed report the CommitLog's max and confirmed
	// offsets for the heartbeats; nil reports 0.
	MaxOffset, Confirmed func() int64
	// Dial opens a connection to a controller (required; the process
	// passes netloop/ctlwire's, a remoting client signed and over TLS as
	// the broker's other clients).
	Dial Dialer
	// Logger receives role changes and controller trouble.
	Logger zerolog.Logger
	// HeartbeatInterval, Lease, FenceAfter: 0 = the defaults. FenceAfter
	// must stay below the controller's lease, so that a cut-off master
	// stops acknowledging before another is elected.
	HeartbeatInterval, Lease, FenceAfter time.Duration
}

// Member is a running controller client.
type Member struct {
	o    Options
	stop chan struct{}
	// ctx ends at Stop: the heartbeat goroutine's dial or call in flight
	// (to a controller that may not answer) ends with it.
	ctx       context.Context
	cancel    context.CancelFunc
	proposals chan []int64
	wg        sync.WaitGroup
	once      sync.Once
	mu        sync.Mutex   // serializes role updates
	renewed   atomic.Int64 // unix nanos of the send time of the last renewed heartbeat
	panics    atomic.Int64 // panics its loops recovered from (supervise.go)
	replicaID atomic.Int64
	// Owned by the heartbeat goroutine.
	client Conn
	target int // index into controllers of the current guess
	addrs  []string
	leader string // leader address a follower named ("" none)
	// failingSince is when calls on the open connection began timing out
	// (zero: the last call was answered).
	failingSince time.Time
}

// Start loads the replica id and starts heartbeating.
func Start(o Options) (*Member, error) {
	if o.Role == nil {
		return nil, errors.New("controller member: no role holder")
	}
	if len(o.Controllers) == 0 || o.BrokerName == "" || o.BrokerAddr == "" {
		return nil, errors.New("controller member: controllers, brokerName and brokerAddr are required")
	}
	if o.Dial == nil {
		return nil, errors.New("controller member: no dialer")
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.FenceAfter <= 0 {
		o.FenceAfter = DefaultFenceAfter
	}
	m := &Member{o: o, stop: make(chan struct{}), proposals: make(chan []int64, 1), addrs: o.Controllers}
	id, err := m.loadID()
	if err != nil {
		return nil, err
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.replicaID.Store(id)
	m.supervise("heartbeats", m.heartbeats)
	m.supervise("fence watch", m.fenceWatch)
	return m, nil
}

// Stop stops heartbeating and closes the connection (bounded by ctx).
func (m *Member) Stop(ctx context.Context) error {
	var err error
	m.once.Do(func() {
		close(m.stop)
		m.cancel()
		done := make(chan struct{})
		go func() { m.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("controller member stop: %w", ctx.Err())
		}
	})
	return err
}

// ReplicaID is the broker's replica id (0 until the controller gave one).
func (m *Member) ReplicaID() int64 { return m.replicaID.Load() }

// ProposeSyncStateSet asks the controller to make set the sync-state set
// (async; master only; a newer proposal replaces one not yet sent). The
// outcome shows in the Role holder.
func (m *Member) ProposeSyncStateSet(set []int64) {
	s := append([]int64(nil), set...)
	for {
		select {
		case m.proposals <- s:
			return
		default:
		}
		select {
		case <-m.proposals:
		default:
		}
	}
}

// idPath is <Dir>/ha/replica-id.
func (m *Member) idPath() string { return filepath.Join(m.o.Dir, "ha", ReplicaIDFile) }

// loadID reads the persisted replica id (0 when none).
func (m *Member) loadID() (int64, error) {
	if m.o.Dir == "" {
		return 0, nil
	}
	b, err := os.ReadFile(m.idPath())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("controller member: read replica id: %w", err)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("controller member: replica id file %s holds %q, not an id >= 1", m.idPath(), b)
	}
	return id, nil
}

// saveID persists a new replica id (atomically).
func (m *Member) saveID(id int64) error {
	if m.o.Dir == "" {
		return nil
	}
	if err := vfs.MkdirAllSynced(nil, filepath.Dir(m.idPath()), 0o755); err != nil {
		return fmt.Errorf("controller member: replica id dir: %w", err)
	}
	if err := vfs.WriteFileAtomic(nil, m.idPath(), []byte(strconv.FormatInt(id, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("controller member: write replica id: %w", err)
	}
	return nil
}

// fenceWatch fences a master whose last renewal is older than FenceAfter.
func (m *Member) fenceWatch() {
	tick := min(m.o.FenceAfter/10, 100*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.fenceIfExpired()
	}
}

// fenceIfExpired fences a master whose lease was not renewed in time.
func (m *Member) fenceIfExpired() {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.o.Role.Get()
	last := m.renewed.Load()
	if st.Kind == role.Master && !st.Fenced && last != 0 && time.Since(time.Unix(0, last)) >= m.o.FenceAfter {
		st.Fenced = true
		m.o.Role.Set(st)
		m.o.Logger.Warn().Int64("epoch", st.Epoch).Dur("sinceRenewal", time.Since(time.Unix(0, last))).
			Msg("controller member: master lease not renewed, fenced")
	}
}

// apply writes a controller answer into the role holder; sentAt is when
// the request that got it was sent (the lease counts from there).
func (m *Member) apply(a controller.RoleAnswer, sentAt time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := a.ReplicaID
	if id > 0 && id != m.replicaID.Load() {
		if err := m.saveID(id); err != nil {
			m.o.Logger.Error().Err(err).Int64("replicaId", id).Msg("controller member: replica id not persisted")
			return
		}
		m.replicaID.Store(id)
	}
	st := role.State{Kind: role.Replica, BrokerID: id, ReplicaID: id, Epoch: a.MasterEpoch,
		MasterAddr: a.MasterAddr, MasterHAAddr: a.MasterHAAddr, SyncStateSet: a.SyncStateSet, SyncStateSetEpoch: a.SyncStateSetEpoch}
	if a.MasterID != 0 && a.MasterID == id {
		st.Kind, st.BrokerID = role.Master, 0
	}
	old := m.o.Role.Get()
	m.renewed.Store(sentAt.UnixNano())
	m.o.Role.Set(st)
	if old.Kind != st.Kind || old.Epoch != st.Epoch || old.Fenced {
		m.o.Logger.Info().Str("role", st.Kind.String()).Int64("replicaId", id).Int64("epoch", st.Epoch).
			Str("master", st.MasterAddr).Ints64("syncStateSet", st.SyncStateSet).Bool("wasFenced", old.Fenced).
			Msg("controller member: role")
	}
}
