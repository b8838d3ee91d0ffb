package replication

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// Errors of the replica side; test with errors.Is.
var (
	// ErrStaleEpoch means a master sent bytes of an epoch older than the
	// newest one the replica's log already holds: the frame is refused and
	// the connection dropped.
	ErrStaleEpoch = errors.New("replication: frame of an older epoch refused")
	// ErrRefused means the master refused the handshake.
	ErrRefused = errors.New("replication: handshake refused")
)

// maxBurst bounds the bytes a replica appends before it fsyncs and acks
// even though more frames are already buffered (a long catch-up still
// reports progress).
const maxBurst = 8 << 20

// Redial backoff of the receiver (a master that cannot be dialed).
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// followOnce runs one connection to the master: handshake, truncation to
// the consistent point, then frames until an error. connected reports
// whether the master was reached (else the receiver redials by itself).
func (s *Service) followOnce(f *stream) (connected bool, err error) {
	st := s.role()
	d := net.Dialer{Timeout: handshakeTimeout}
	var c net.Conn
	if s.o.TLS != nil {
		cfg := s.o.TLS
		if s.o.DialTLS != nil {
			cfg = s.o.DialTLS
		}
		c, err = tls.DialWithDialer(&d, "tcp", f.addr, cfg)
	} else {
		c, err = d.Dial("tcp", f.addr)
	}
	if err != nil {
		return false, fmt.Errorf("dial %s: %w", f.addr, err)
	}
	defer c.Close()
	if !f.setConn(c) {
		return true, nil
	}
	if st.Kind != role.Replica || st.ReplicaID <= 0 || st.Epoch != f.epoch || st.MasterHAAddr != f.addr {
		// The controller's word changed since the target was set: follow
		// only the master it names now (the retarget is on its way).
		return true, fmt.Errorf("role changed (%s at epoch %d, master %q) since following %s at epoch %d: %w",
			st.Kind, st.Epoch, st.MasterHAAddr, f.addr, f.epoch, ErrStaleEpoch)
	}
	cl := s.o.Store.CommitLog
	local := s.o.Epochs.Entries()
	known := f.epoch
	if n := len(local); n > 0 && local[n-1].Epoch > known {
		known = local[n-1].Epoch
	}
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	hs := ha.Handshake{Version: ha.Version, ReplicaID: st.ReplicaID, Epoch: known,
		MaxOffset: cl.MaxOffset(), Epochs: local}
	// The handshake (this log's epochs and end) goes out only after the
	// master proved the secret, with this replica's proof.
	if err := s.dialMaster(c, f.addr, st.ReplicaID, ha.AppendFrame(nil, hs)); err != nil {
		return true, err
	}
	r := ha.NewReader(c)
	fr, err := r.Next()
	if err != nil {
		return true, fmt.Errorf("handshake reply: %w", err)
	}
	reply, ok := fr.(ha.HandshakeReply)
	if !ok {
		return true, fmt.Errorf("frame type %d instead of a handshake reply: %w", fr.Type(), ha.ErrFrame)
	}
	if !reply.OK {
		return true, fmt.Errorf("%s: %w", reply.Reason, ErrRefused)
	}
	if reply.MasterEpoch < f.epoch {
		return true, fmt.Errorf("master at epoch %d, expected %d: %w", reply.MasterEpoch, f.epoch, ErrStaleEpoch)
	}
	if err := s.alignTo(local, reply); err != nil {
		return true, err
	}
	ack := func() error {
		a := ha.Ack{ReplicaID: st.ReplicaID, Epoch: reply.MasterEpoch, MaxOffset: s.localDurable()}
		_ = c.SetWriteDeadline(time.Now().Add(s.idle()))
		if _, err := c.Write(ha.AppendFrame(nil, a)); err != nil {
			return fmt.Errorf("ack: %w", err)
		}
		return nil
	}
	if err := ack(); err != nil {
		return true, err
	}
	_ = c.SetDeadline(time.Time{})
	s.log.Info().Str("master", f.addr).Int64("epoch", reply.MasterEpoch).Int64("from", cl.MaxOffset()).
		Msg("replication: following")
	pending, burst, lastAck := false, 0, time.Now()
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.idle()))
		fr, err := r.Next()
		if err != nil {
			return true, fmt.Errorf("read frame: %w", err)
		}
		t, ok := fr.(ha.Transfer)
		if !ok {
			return true, fmt.Errorf("frame type %d instead of a transfer: %w", fr.Type(), ha.ErrFrame)
		}
		if err := s.receive(t, reply.MasterEpoch); err != nil {
			return true, err
		}
		if len(t.Body) > 0 {
			pending = true
			burst += len(t.Body)
		}
		if r.Buffered() > 0 && burst < maxBurst && time.Since(lastAck) < s.o.HeartbeatInterval/2 {
			continue // more of the burst is here: fsync and ack once after it
		}
		if pending && s.o.FlushSync {
			if err := cl.Sync(); err != nil {
				return true, fmt.Errorf("sync: %w", err)
			}
		}
		if err := ack(); err != nil {
			return true, err
		}
		s.advance()
		if pending && s.o.OnAppended != nil {
			s.o.OnAppended(cl.MaxOffset())
		}
		pending, burst, lastAck = false, 0, time.Now()
	}
}

// alignTo truncates the log to the consistent point with the master and
// adopts the master's epochs below it. The log is fsynced after, so the
// first ack (the sender's start) is durable.
func (s *Service) alignTo(local []ha.Epoch, reply ha.HandshakeReply) error {
	cl := s.o.Store.CommitLog
	end := cl.MaxOffset()
	cp := ha.ConsistentPoint(local, reply.Epochs, end)
	cp = min(cp, reply.MaxOffset)
	if cp < 0 {
		cp = cl.MinOffset()
	}
	if cp < end {
		if c := s.Confirmed(); cp < c {
			s.log.Error().Int64("consistent_point", cp).Int64("confirmed", c).
				Msg("replication: truncating below the confirmed offset")
		}
		if err := cl.Truncate(cp); err != nil {
			return fmt.Errorf("truncate to the consistent point %d: %w", cp, err)
		}
		s.cutConfirmed(cp)
		s.log.Warn().Int64("from", end).Int64("to", cp).Msg("replication: cut the log to the consistent point")
		if s.o.OnTruncate != nil {
			s.o.OnTruncate(cp)
		}
	}
	var keep []ha.Epoch
	for _, e := range reply.Epochs {
		if e.Start <= cp {
			keep = append(keep, e)
		}
	}
	if err := s.o.Epochs.Reset(keep); err != nil {
		return fmt.Errorf("adopt the master's epochs: %w", err)
	}
	if err := cl.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// cutConfirmed lowers what this replica and its master are known to have
// confirmed to cp, the consistent point the log was cut to.
func (s *Service) cutConfirmed(cp int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.confirmed.Load() > cp {
		s.confirmed.Store(cp)
	}
	s.masterConfirmed = min(s.masterConfirmed, cp)
}

// setMasterConfirmed records the master's confirmed offset a frame carried.
func (s *Service) setMasterConfirmed(v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.masterConfirmed = v
}

// receive checks and appends one transfer frame.
func (s *Service) receive(t ha.Transfer, masterEpoch int64) error {
	last, ok := s.o.Epochs.Last()
	if ok && t.Epoch < last.Epoch {
		return fmt.Errorf("bytes at %d of epoch %d, the log holds epoch %d from %d: %w",
			t.Offset, t.Epoch, last.Epoch, last.Start, ErrStaleEpoch)
	}
	if t.Epoch > masterEpoch {
		return fmt.Errorf("frame of epoch %d from the master of epoch %d: %w", t.Epoch, masterEpoch, ha.ErrFrame)
	}
	s.setMasterConfirmed(t.Confirmed)
	if len(t.Body) == 0 {
		return nil
	}
	if err := s.faults.hit(&s.faults.recv); err != nil {
		return fmt.Errorf("append at %d: %w", t.Offset, err)
	}
	if !ok || t.Epoch > last.Epoch {
		if t.EpochStart > t.Offset || (ok && t.EpochStart < last.Start) {
			return fmt.Errorf("epoch %d starting at %d for bytes at %d: %w", t.Epoch, t.EpochStart, t.Offset, ha.ErrFrame)
		}
		if err := s.o.Epochs.Append(t.Epoch, t.EpochStart); err != nil {
			return fmt.Errorf("record epoch %d: %w", t.Epoch, err)
		}
	}
	if err := s.o.Store.CommitLog.AppendRaw(t.Offset, t.Body); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	return nil
}
