package replication

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// handshakeTimeout bounds the handshake exchange on a new connection.
const handshakeTimeout = 5 * time.Second

// peer is what the master knows of one replica (kept across reconnects
// while it stays master).
type peer struct {
	id         int64
	addr       string
	known      bool  // acked at least once under this master
	acked      int64 // the replica's durable end
	connected  bool
	caughtUpAt time.Time // last moment the replica held all the master had
	markOff    int64     // the master's end at markAt
	markAt     time.Time
	conn       net.Conn
}

// idle is how long a connection may stay silent.
func (s *Service) idle() time.Duration { return 6 * s.o.HeartbeatInterval }

// dropConns closes every replica connection (the master's epoch changed).
func (s *Service) dropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.members = map[int64]*peer{}
}

// resetMembers starts the master's view of its members at st.
func (s *Service) resetMembersLocked(st role.State) {
	now := time.Now()
	s.members = map[int64]*peer{}
	for _, id := range st.SyncStateSet {
		if id != st.ReplicaID {
			s.members[id] = &peer{id: id, caughtUpAt: now, markAt: now}
		}
	}
}

// serve runs one replica connection: handshake, then the sender here and
// the ack reader on its own goroutine (counted in wg, the sender stage
// instance's). It returns why the connection ended: an ownFailure when the
// master's side failed, nil when the service stops.
func (s *Service) serve(c net.Conn, wg *sync.WaitGroup) error {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	log := s.log.With().Str("replica_addr", c.RemoteAddr().String()).Logger()
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	st := s.role()
	proved, err := s.acceptReplica(c, st.ReplicaID)
	if err != nil {
		s.refused(log, err)
		return nil // logged by refused, rate-limited: a storm of strangers does not flood the log
	}
	// The replica proved the secret: from here on it may learn the log.
	r := ha.NewReader(c)
	f, err := r.Next()
	if err != nil {
		return fmt.Errorf("handshake of replica %d: %w", proved, err)
	}
	st = s.role()
	cl := s.o.Store.CommitLog
	reply := ha.HandshakeReply{OK: true, MasterEpoch: st.Epoch, MaxOffset: cl.MaxOffset(), Epochs: s.o.Epochs.Entries()}
	h, ok := f.(ha.Handshake)
	switch {
	case !ok:
		reply.Reason = fmt.Sprintf("expected a handshake, got frame type %d", f.Type())
	case h.Version != ha.Version:
		reply.Reason = fmt.Sprintf("stream version %d, master speaks %d", h.Version, ha.Version)
	case h.ReplicaID != proved:
		reply.Reason = fmt.Sprintf("handshake of replica %d on the connection of replica %d", h.ReplicaID, proved)
	case st.Kind != role.Master:
		reply.Reason = "not master (" + st.Kind.String() + ")"
	case h.Epoch > st.Epoch:
		reply.Reason = fmt.Sprintf("replica knows epoch %d, master is at %d", h.Epoch, st.Epoch)
	case h.ReplicaID <= 0 || h.ReplicaID == st.ReplicaID:
		reply.Reason = fmt.Sprintf("bad replica id %d", h.ReplicaID)
	}
	if reply.Reason != "" {
		reply.OK = false
		log.Warn().Str("reason", reply.Reason).Int64("replica_id", h.ReplicaID).Msg("replication: handshake refused")
	}
	if _, err := c.Write(ha.AppendFrame(nil, reply)); err != nil {
		return fmt.Errorf("handshake reply: %w", err)
	}
	if !reply.OK {
		return fmt.Errorf("handshake refused: %s", reply.Reason)
	}
	log = log.With().Int64("replica_id", h.ReplicaID).Int64("epoch", st.Epoch).Logger()
	// The replica truncates to its consistent point, then acknowledges
	// its end: the sender starts there.
	_ = c.SetDeadline(time.Now().Add(s.idle() + handshakeTimeout))
	start, err := s.readAck(r, h.ReplicaID, st.Epoch)
	if err != nil {
		return fmt.Errorf("first ack of replica %d: %w", h.ReplicaID, err)
	}
	if start > cl.MaxOffset() || start < cl.MinOffset() {
		log.Error().Int64("replica_end", start).Int64("min", cl.MinOffset()).Int64("max", cl.MaxOffset()).
			Msg("replication: replica end outside the master's log")
		return fmt.Errorf("replica %d ends at %d, outside the master's log [%d, %d]", h.ReplicaID, start,
			cl.MinOffset(), cl.MaxOffset())
	}
	_ = c.SetDeadline(time.Time{})
	p := s.attach(h.ReplicaID, c, start)
	defer s.detach(p, c)
	log.Info().Int64("from", start).Msg("replication: replica connected")

	acks := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := s.catchErr("ack reader", func() error {
			for {
				_ = c.SetReadDeadline(time.Now().Add(s.idle()))
				off, err := s.readAck(r, h.ReplicaID, st.Epoch)
				if err != nil {
					return err
				}
				s.onAck(p, off)
			}
		})
		acks <- err
		_ = c.Close()
	}()
	err = s.send(c, start, st.Epoch, acks)
	_ = c.Close()
	if err != nil {
		return fmt.Errorf("replica %d: %w", h.ReplicaID, err)
	}
	return nil
}

// readAck reads one ack and checks it belongs to this connection.
func (s *Service) readAck(r *ha.Reader, id, epoch int64) (int64, error) {
	f, err := r.Next()
	if err != nil {
		return 0, fmt.Errorf("read ack: %w", err)
	}
	a, ok := f.(ha.Ack)
	if !ok {
		return 0, fmt.Errorf("frame type %d instead of an ack: %w", f.Type(), ha.ErrFrame)
	}
	if a.ReplicaID != id || a.Epoch != epoch {
		return 0, fmt.Errorf("ack of replica %d epoch %d on the connection of %d at epoch %d: %w",
			a.ReplicaID, a.Epoch, id, epoch, ha.ErrFrame)
	}
	return a.MaxOffset, nil
}

// attach records a connected replica.
func (s *Service) attach(id int64, c net.Conn, acked int64) *peer {
	s.mu.Lock()
	p := s.members[id]
	if p == nil {
		now := time.Now()
		p = &peer{id: id, caughtUpAt: now, markAt: now}
		s.members[id] = p
	}
	if p.conn != nil && p.conn != c {
		_ = p.conn.Close() // a stale connection of the same replica
	}
	p.addr, p.conn, p.connected = c.RemoteAddr().String(), c, true
	p.known, p.acked = true, acked
	p.markOff, p.markAt = s.o.Store.CommitLog.MaxOffset(), time.Now()
	s.mu.Unlock()
	s.advance()
	return p
}

// detach records a disconnected replica.
func (s *Service) detach(p *peer, c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.conn == c {
		p.conn, p.connected = nil, false
	}
}

// onAck records an acknowledged end.
func (s *Service) onAck(p *peer, off int64) {
	now := time.Now()
	s.mu.Lock()
	p.acked = max(p.acked, off)
	if off >= p.markOff {
		p.caughtUpAt = p.markAt
		p.markOff, p.markAt = s.o.Store.CommitLog.MaxOffset(), now
	}
	s.mu.Unlock()
	s.advance()
}

// send streams the log from off until the connection or the service ends.
func (s *Service) send(c net.Conn, off, epoch int64, acks <-chan error) error {
	cl := s.o.Store.CommitLog
	var buf []byte
	hb := time.NewTimer(s.o.HeartbeatInterval)
	defer hb.Stop()
	write := func(t ha.Transfer) error {
		buf = ha.AppendFrame(buf[:0], t)
		_ = c.SetWriteDeadline(time.Now().Add(s.idle()))
		if _, err := c.Write(buf); err != nil {
			return fmt.Errorf("send at %d: %w", t.Offset, err)
		}
		hb.Reset(s.o.HeartbeatInterval)
		return nil
	}
	for {
		wake := s.woken()
		if err := s.faults.hit(&s.faults.send); err != nil {
			return ownFailure{fmt.Errorf("read log at %d: %w", off, err)}
		}
		b, next, err := cl.ReadRaw(off, s.o.BatchBytes)
		if errors.Is(err, io.EOF) {
			select {
			case <-wake:
				continue
			case <-hb.C:
				ep, _ := epochAt(s.o.Epochs.Entries(), off)
				if err := write(ha.Transfer{Offset: off, Epoch: max(ep.Epoch, epoch), EpochStart: ep.Start,
					Confirmed: s.Confirmed()}); err != nil {
					return err
				}
				continue
			case err := <-acks:
				return err
			case <-s.stop:
				return nil
			}
		}
		if err != nil {
			return ownFailure{fmt.Errorf("read log at %d: %w", off, err)}
		}
		if len(b) > 0 {
			ep, bound := epochAt(s.o.Epochs.Entries(), off)
			if bound > off && bound < off+int64(len(b)) {
				b, next = b[:bound-off], bound // a frame never spans two epochs
			}
			if err := write(ha.Transfer{Offset: off, Epoch: ep.Epoch, EpochStart: ep.Start,
				Confirmed: s.Confirmed(), Body: b}); err != nil {
				return err
			}
		}
		off = next
		select {
		case err := <-acks:
			return err
		case <-s.stop:
			return nil
		default:
		}
	}
}

// epochAt returns the epoch that wrote offset off (the last entry starting
// at or before it; epoch 0 from 0 when none does) and where the next epoch
// starts (-1: none).
func epochAt(entries []ha.Epoch, off int64) (ha.Epoch, int64) {
	cur, bound := ha.Epoch{}, int64(-1)
	for _, e := range entries {
		if e.Start <= off {
			cur = e
		} else {
			bound = e.Start
			break
		}
	}
	return cur, bound
}

// housekeep (master) proposes to drop lagging members from the sync-state
// set and to add replicas that caught up.
func (s *Service) housekeep() {
	s.mu.Lock()
	st := s.cur
	if st.Kind != role.Master || s.o.OnSyncStateSetChange == nil {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	end := s.o.Store.CommitLog.MaxOffset()
	confirmed := s.confirmed.Load()
	epochStart := int64(0)
	if last, ok := s.o.Epochs.Last(); ok {
		epochStart = last.Start
	}
	var set []int64
	for _, id := range st.SyncStateSet {
		p := s.members[id]
		if id != st.ReplicaID && p != nil && now.Sub(p.caughtUpAt) > s.o.LagTimeout && (!p.connected || p.acked < end) {
			continue // lagging: shrink
		}
		set = append(set, id)
	}
	for id, p := range s.members {
		if !st.InSyncStateSet(id) && p.connected && p.acked >= confirmed && p.acked >= epochStart {
			set = append(set, id) // caught up in this epoch: expand
		}
	}
	slices.Sort(set)
	if slices.Equal(set, st.SyncStateSet) ||
		(slices.Equal(set, s.proposed) && now.Sub(s.proposedAt) < s.o.LagTimeout) {
		s.mu.Unlock()
		return
	}
	s.proposed, s.proposedAt = set, now
	s.mu.Unlock()
	s.log.Info().Ints64("sync_state_set", st.SyncStateSet).Ints64("proposed", set).
		Msg("replication: proposing a sync-state set change")
	s.o.OnSyncStateSetChange(slices.Clone(set))
}

// Replicas lists the replicas the master knows, by id (empty when not
// master).
func (s *Service) Replicas() []ReplicaStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Kind != role.Master {
		return nil
	}
	end := s.o.Store.CommitLog.MaxOffset()
	out := make([]ReplicaStatus, 0, len(s.members))
	for id, p := range s.members {
		out = append(out, ReplicaStatus{ReplicaID: id, Addr: p.addr, Acked: p.acked, LagBytes: max(end-p.acked, 0),
			InSync: s.cur.InSyncStateSet(id), Connected: p.connected})
	}
	slices.SortFunc(out, func(a, b ReplicaStatus) int { return int(a.ReplicaID - b.ReplicaID) })
	return out
}
