package member

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/wirecode"
)

// heartbeats is the goroutine that owns the connection: a heartbeat every
// HeartbeatInterval, and the proposals in between.
func (m *Member) heartbeats() {
	defer m.closeClient()
	t := time.NewTicker(m.o.HeartbeatInterval)
	defer t.Stop()
	m.beat()
	for {
		select {
		case <-m.stop:
			return
		case set := <-m.proposals:
			m.propose(set)
		case <-t.C:
			m.beat()
		}
	}
}

// callTimeout bounds one request (dial included).
func (m *Member) callTimeout() time.Duration { return max(m.o.HeartbeatInterval, 500*time.Millisecond) }

// call makes one call (do) to the current leader guess, following
// CONTROLLER_NOT_LEADER answers through the configured controllers; it
// returns the answer and when the answered request was sent. A redirect
// is followed only to an address of Options.Controllers: the leader's own
// address may not be the way this broker reaches it (a proxy, NAT, or a
// partition that cuts the configured path), and a broker cut off from
// every configured controller must lose its lease, not keep it through a
// side door. Otherwise the next configured controller is asked.
func (m *Member) call(do func(c Conn) (Reply, error)) (Reply, time.Time, error) {
	var lastErr error
	for attempt := 0; attempt <= len(m.addrs) && m.ctx.Err() == nil; attempt++ {
		c, err := m.conn()
		if err != nil {
			lastErr = err
			m.next()
			continue
		}
		sent := time.Now()
		resp, err := do(c)
		if err != nil {
			lastErr = fmt.Errorf("controller %s: %w", c.Addr(), err)
			if m.keepAfterTimeout(c) {
				return Reply{}, time.Time{}, lastErr
			}
			m.closeClient()
			m.next()
			continue
		}
		m.failingSince = time.Time{}
		if resp.Code == controller.CodeNotLeader {
			lastErr = fmt.Errorf("controller %s: %s", c.Addr(), resp.Remark)
			m.closeClient()
			if l := resp.LeaderAddr; l != "" && l != c.Addr() && slices.Contains(m.addrs, l) {
				m.leader = l
			} else {
				m.next()
			}
			continue
		}
		return resp, sent, nil
	}
	if lastErr == nil { // stopped before the first attempt
		lastErr = fmt.Errorf("controller member stopping: %w", m.ctx.Err())
	}
	return Reply{}, time.Time{}, lastErr
}

// keepAfterTimeout reports whether a call that failed on c should keep c:
// a timeout on a connection still open, for up to FenceAfter/2 of
// failures in a row. Closing the connection tells the controller this
// broker died (its master gets replaced), so a leader that is merely slow
// for a moment is not left; one that stays silent is.
func (m *Member) keepAfterTimeout(c Conn) bool {
	select {
	case <-c.Done():
		return false
	default:
	}
	now := time.Now()
	if m.failingSince.IsZero() {
		m.failingSince = now
	}
	return now.Sub(m.failingSince) < m.o.FenceAfter/2
}

// conn returns the connection to the current guess, dialing it if needed.
func (m *Member) conn() (Conn, error) {
	if m.client != nil {
		select {
		case <-m.client.Done():
			m.closeClient()
		default:
			return m.client, nil
		}
	}
	addr := m.leader
	if addr == "" {
		addr = m.addrs[m.target%len(m.addrs)]
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.callTimeout())
	defer cancel()
	c, err := m.o.Dial(ctx, addr)
	if err != nil {
		m.leader = ""
		return nil, fmt.Errorf("dial controller %s: %w", addr, err)
	}
	m.client = c
	return c, nil
}

// next moves the guess to the next controller.
func (m *Member) next() {
	m.leader = ""
	m.target++
}

func (m *Member) closeClient() {
	m.failingSince = time.Time{}
	if m.client != nil {
		_ = m.client.Close()
		m.client = nil
	}
}

// beat sends one heartbeat and applies the answer.
func (m *Member) beat() {
	h := controller.Heartbeat{Cluster: m.o.Cluster, BrokerName: m.o.BrokerName, BrokerAddr: m.o.BrokerAddr, HAAddr: m.o.HAAddr,
		ReplicaID: m.replicaID.Load(), Epoch: m.o.Role.Get().Epoch}
	if m.o.MaxOffset != nil {
		h.MaxOffset = m.o.MaxOffset()
	}
	if m.o.Confirmed != nil {
		h.Confirmed = m.o.Confirmed()
	}
	resp, sent, err := m.call(func(c Conn) (Reply, error) { return c.Heartbeat(m.ctx, h, m.callTimeout()) })
	if err != nil {
		m.o.Logger.Debug().Err(err).Msg("controller member: heartbeat failed")
		return
	}
	if resp.Code != wirecode.Success {
		m.o.Logger.Warn().Int32("code", resp.Code).Str("remark", resp.Remark).Msg("controller member: heartbeat refused")
		return
	}
	if resp.RoleErr != nil {
		m.o.Logger.Warn().Err(resp.RoleErr).Msg("controller member: bad heartbeat answer")
		return
	}
	m.apply(resp.Role, sent)
}

// propose sends CONTROLLER_ALTER_SYNC_STATE_SET for set, fenced by the
// role's current epochs; the answer updates the role.
func (m *Member) propose(set []int64) {
	st := m.o.Role.Get()
	if st.Kind != role.Master || st.Fenced {
		m.o.Logger.Debug().Ints64("set", set).Msg("controller member: not an unfenced master, sync-state set proposal dropped")
		return
	}
	req := controller.AlterRequest{Cluster: m.o.Cluster, BrokerName: m.o.BrokerName, MasterID: st.ReplicaID, MasterEpoch: st.Epoch,
		Set: controller.SyncStateSetBody{SyncStateSet: set, SyncStateSetEpoch: st.SyncStateSetEpoch}}
	resp, sent, err := m.call(func(c Conn) (Reply, error) { return c.AlterSyncStateSet(m.ctx, req, m.callTimeout()) })
	if err != nil {
		m.o.Logger.Warn().Err(err).Ints64("set", set).Msg("controller member: sync-state set proposal failed")
		return
	}
	if resp.Code != wirecode.Success {
		m.o.Logger.Warn().Int32("code", resp.Code).Str("remark", resp.Remark).Ints64("set", set).Msg("controller member: sync-state set proposal refused")
		return
	}
	if resp.RoleErr != nil {
		m.o.Logger.Warn().Err(resp.RoleErr).Msg("controller member: bad alter answer")
		return
	}
	a := resp.Role
	a.ReplicaID = st.ReplicaID
	m.apply(a, sent)
}
