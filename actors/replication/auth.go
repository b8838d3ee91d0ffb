package replication

// Authentication of a replica connection (stream version 2; storage/ha
// auth.go, docs/formats.md "HA stream"). Before any frame the replica
// (dialer) and the master (acceptor) prove the group's HA secret to each
// other with actors/challenge over fresh nonces, the roles, the group,
// the replica id and the master's published HA address, bound to the TLS
// connection when there is one. The secret never crosses the wire. The
// master sends nothing about its log before the replica's proof matched
// (a refusal is always ha.Refusal()); the replica sends its handshake
// (its epochs and end) only after the master's proof matched, in the same
// write as its own proof, so the exchange costs one round trip more than
// version 1's handshake. Both sides run it under the handshake deadline.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/challenge"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// ErrAuth means the other end of a replica connection did not prove the
// group's secret, or is not the peer expected; test with errors.Is.
var ErrAuth = errors.New("replication: peer not authenticated")

// params are the challenge's parameters on connection c: the secret, and
// the TLS channel binding when c is a TLS connection (its handshake done
// here, under the caller's deadline).
func (s *Service) params(c net.Conn) (challenge.Params, error) {
	p := challenge.Params{Magic: ha.ChallengeMagic, Label: ha.ChallengeLabel, Secret: s.o.Secret}
	tc, ok := c.(*tls.Conn)
	if !ok {
		return p, nil
	}
	if err := tc.Handshake(); err != nil {
		return p, fmt.Errorf("tls handshake: %w", err)
	}
	b, err := challenge.TLSBinding(tc.ConnectionState(), ha.TLSExporterLabel)
	if err != nil {
		return p, err
	}
	p.Binding = b
	return p, nil
}

// acceptReplica authenticates an accepted connection on the master and
// returns the replica id the dialer proved. On any failure after the TLS
// handshake the connection gets ha.Refusal() and nothing else.
func (s *Service) acceptReplica(c net.Conn, self int64) (int64, error) {
	p, err := s.params(c)
	if err != nil {
		return 0, err
	}
	var id int64
	_, err = challenge.Accept(c, p, ha.MasterPeerID(s.o.Group, s.Addr()), func(peer string) bool {
		n, err := ha.ParseReplicaPeerID(s.o.Group, peer)
		id = n
		return err == nil && n != self
	})
	if err != nil {
		_, _ = c.Write(ha.Refusal())
		return 0, fmt.Errorf("%w: %w", ErrAuth, err)
	}
	return id, nil
}

// dialMaster authenticates a dialed connection to the master at addr (the
// HA address the controller named) as replica id, then sends first (the
// handshake frame) right after its own proof.
func (s *Service) dialMaster(c net.Conn, addr string, id int64, first []byte) error {
	p, err := s.params(c)
	if err != nil {
		return err
	}
	if tc, ok := c.(*tls.Conn); ok && s.o.VerifyMaster != nil {
		if err := s.o.VerifyMaster(tc.ConnectionState(), addr); err != nil {
			return fmt.Errorf("master %s: %w: %w", addr, ErrAuth, err)
		}
	}
	if err := challenge.Dial(c, p, ha.ReplicaPeerID(s.o.Group, id), ha.MasterPeerID(s.o.Group, addr), first); err != nil {
		return fmt.Errorf("master %s: %w: %w", addr, ErrAuth, err)
	}
	return nil
}

// refused counts a connection the master refused before the replica was
// proven and logs it, at most once a second.
func (s *Service) refused(log zerolog.Logger, err error) {
	n := s.refusals.Add(1)
	now := time.Now().UnixNano()
	last := s.refusedLog.Load()
	if now-last < int64(time.Second) || !s.refusedLog.CompareAndSwap(last, now) {
		return
	}
	log.Warn().Err(err).Int64("refused_total", n).
		Msg("replication: connection refused (not an authenticated replica of the group)")
}

// Refused counts the connections the HA port refused before the peer
// proved the group's secret.
func (s *Service) Refused() int64 { return s.refusals.Load() }
