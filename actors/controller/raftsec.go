package controller

// What protects the raft port (docs/controller.md, "The raft port").
// hashicorp/raft's TCP transport trusts whoever connects: one forged
// AppendEntries (a higher term, a made-up leader, a committed entry
// carrying an elect command) is applied, and forged RequestVotes stop all
// writes. secureLayer is the raft StreamLayer that authenticates both ends
// of every connection before raft reads or writes a byte of it:
//
//   - mutual TLS (RaftSecurity.TLS): both ends present the process's
//     certificate, verified against the configured CAs, and the peer's
//     certificate must be valid (SAN, or CN) for the host of a configured
//     peer (the dialer: for the host it dialed);
//   - a cluster secret (RaftSecurity.Secret, inside TLS when both are
//     set): the challenge of raftsec_secret.go, each end proving
//     HMAC-SHA256(secret, transcript) over both ends' fresh nonces, its
//     role and both ids; the dialer's id must be a configured peer (and,
//     with TLS, one its certificate is valid for).
//
// An accepted connection is handed to raft at once, as a conn whose first
// Read or Write runs the handshake (bounded by the handshake timeout), on
// the goroutine raft serves the connection with: no goroutine of this
// layer's own, and a silent or slow connection holds up no other. A dialed
// connection is handed over only after its handshake succeeded.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// DefaultRaftHandshakeTimeout bounds a raft connection's authentication:
// a connection that has not completed it by then is closed.
const DefaultRaftHandshakeTimeout = 5 * time.Second

// MinSecretLen is the shortest cluster secret taken.
const MinSecretLen = 16

// RaftSecurity says what protects the raft port. With neither Secret nor
// TLS, the port is open to anyone who reaches it: Start refuses that on a
// non-loopback address (Loopback) unless Insecure says so.
type RaftSecurity struct {
	// Secret is the cluster secret every connection proves it knows (at
	// least MinSecretLen bytes; the same on every controller); nil: none.
	Secret []byte
	// TLS makes the raft port speak mutual TLS; nil: none.
	TLS *RaftTLS
	// Insecure lets a controller listen on a non-loopback address with
	// neither Secret nor TLS (logged as a warning, and shown on /healthz).
	Insecure bool
	// HandshakeTimeout bounds a connection's authentication (zero:
	// DefaultRaftHandshakeTimeout).
	HandshakeTimeout time.Duration
	// Loopback reports whether a listen address takes connections from
	// this machine only (the process passes netloop.LoopbackListen); nil:
	// no address does, so an unprotected port needs Insecure.
	Loopback func(listen string) bool
}

// RaftTLS is the TLS material of the raft port: funcs, so that a reloaded
// certificate or CA bundle is used from the next connection on.
type RaftTLS struct {
	// Certificate is the certificate this node presents, as server and as
	// client.
	Certificate func() *tls.Certificate
	// CAs are the CAs a peer's certificate must chain to.
	CAs func() *x509.CertPool
}

// Raft security modes, as Controller.RaftSecurityMode reports them.
const (
	// SecurityMTLSSecret: mutual TLS, and the secret's challenge inside.
	SecurityMTLSSecret = "mtls+secret"
	// SecurityMTLS: mutual TLS.
	SecurityMTLS = "mtls"
	// SecuritySecret: the cluster secret's challenge.
	SecuritySecret = "secret"
	// SecurityInsecure: no authentication, allowed by Insecure.
	SecurityInsecure = "insecure"
	// SecurityLoopback: no authentication, on a loopback address.
	SecurityLoopback = "loopback"
	// SecurityExternal: Config.Transport was given; it is the caller's.
	SecurityExternal = "external"
)

// mode names what protects the port.
func (s *RaftSecurity) mode() string {
	switch {
	case s.TLS != nil && s.Secret != nil:
		return SecurityMTLSSecret
	case s.TLS != nil:
		return SecurityMTLS
	case s.Secret != nil:
		return SecuritySecret
	}
	return ""
}

func (s *RaftSecurity) timeout() time.Duration {
	return orDur(s.HandshakeTimeout, DefaultRaftHandshakeTimeout)
}

// validate checks the security settings of a controller listening on
// listen: an open port must be loopback or explicitly insecure.
func (s *RaftSecurity) validate(listen string) (string, error) {
	if s.Secret != nil && len(s.Secret) < MinSecretLen {
		return "", fmt.Errorf("controller: the cluster secret has %d bytes, want at least %d", len(s.Secret), MinSecretLen)
	}
	if s.TLS != nil && (s.TLS.Certificate == nil || s.TLS.CAs == nil) {
		return "", errors.New("controller: raft TLS needs a certificate and CAs")
	}
	if m := s.mode(); m != "" {
		return m, nil
	}
	if s.Loopback != nil && s.Loopback(listen) {
		return SecurityLoopback, nil
	}
	if s.Insecure {
		return SecurityInsecure, nil
	}
	return "", fmt.Errorf("controller: the raft port %s is not on a loopback address and has neither mutual TLS nor a cluster secret: "+
		"anyone reaching it can elect masters; give --controller-secret-file (or mutual TLS, --tls-client-ca), or --controller-insecure", listen)
}

// secureLayer is the raft StreamLayer of a controller (see the file's
// comment).
type secureLayer struct {
	ln    net.Listener
	adv   net.Addr
	sec   RaftSecurity
	self  string   // this node's raft id (its advertised address)
	peers []string // the configured peers' ids
	log   zerolog.Logger

	refused atomic.Int64 // connections refused, both directions
	lastLog atomic.Int64 // unix nanos of the last refusal logged
}

// newSecureLayer wraps ln.
func newSecureLayer(ln net.Listener, adv net.Addr, sec RaftSecurity, self string, peers []string, log zerolog.Logger) *secureLayer {
	return &secureLayer{ln: ln, adv: adv, sec: sec, self: self, peers: slices.Clone(peers), log: log}
}

// Accept implements net.Listener: the connection authenticates at its
// first Read or Write.
func (l *secureLayer) Accept() (net.Conn, error) {
	c, err := l.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: c, l: l}, nil
}

// Close implements net.Listener.
func (l *secureLayer) Close() error { return l.ln.Close() }

// Addr implements net.Listener: the advertised address.
func (l *secureLayer) Addr() net.Addr { return l.adv }

// Dial implements raft.StreamLayer: the connection is returned once both
// ends are authenticated.
func (l *secureLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	addr := string(address)
	raw, err := (&net.Dialer{Timeout: timeout}).Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controller raft dial %s: %w", addr, err)
	}
	c, err := l.clientHandshake(raw, addr)
	if err != nil {
		_ = raw.Close()
		l.refuse(raw, "dial", err)
		return nil, fmt.Errorf("controller raft dial %s: %w", addr, err)
	}
	return c, nil
}

// clientHandshake authenticates a dialed connection to peer addr.
func (l *secureLayer) clientHandshake(raw net.Conn, addr string) (net.Conn, error) {
	if err := raw.SetDeadline(time.Now().Add(l.sec.timeout())); err != nil {
		return nil, fmt.Errorf("handshake deadline: %w", err)
	}
	conn := raw
	if t := l.sec.TLS; t != nil {
		tc := tls.Client(raw, l.clientTLS())
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		ids, err := l.certPeers(tc.ConnectionState().PeerCertificates, []string{addr})
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("tls: the peer's certificate is not valid for %s", addr)
		}
		conn = tc
	}
	if l.sec.Secret != nil {
		if err := secretClient(conn, l.sec.Secret, l.self, addr); err != nil {
			return nil, err
		}
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear handshake deadline: %w", err)
	}
	return conn, nil
}

// serverHandshake authenticates an accepted connection; it returns the
// conn raft is to use.
func (l *secureLayer) serverHandshake(raw net.Conn) (net.Conn, error) {
	if err := raw.SetDeadline(time.Now().Add(l.sec.timeout())); err != nil {
		return nil, fmt.Errorf("handshake deadline: %w", err)
	}
	conn, allowed := raw, l.peers
	if l.sec.TLS != nil {
		tc := tls.Server(raw, l.serverTLS())
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		ids, err := l.certPeers(tc.ConnectionState().PeerCertificates, l.peers)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, errors.New("tls: the peer's certificate is valid for no configured controller peer")
		}
		conn, allowed = tc, ids
	}
	if l.sec.Secret != nil {
		if _, err := secretServer(conn, l.sec.Secret, l.self, allowed); err != nil {
			return nil, err
		}
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear handshake deadline: %w", err)
	}
	return conn, nil
}

// serverTLS asks every client for a certificate, verified by certPeers
// after the handshake (against the CAs in force then).
func (l *secureLayer) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequireAnyClientCert,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return l.sec.TLS.Certificate(), nil
		},
	}
}

// clientTLS presents the certificate; the server's is verified by
// certPeers after the handshake (against the CAs, for the dialed host),
// hence InsecureSkipVerify.
func (l *secureLayer) clientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // verified by certPeers before any use of the connection
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return l.sec.TLS.Certificate(), nil
		},
	}
}

// certPeers verifies a peer's certificate chain against the CAs and
// returns the ids among candidates (host:port) whose host the certificate
// is valid for (a DNS or IP SAN, or its CN).
func (l *secureLayer) certPeers(chain []*x509.Certificate, candidates []string) ([]string, error) {
	if len(chain) == 0 {
		return nil, errors.New("tls: the peer presented no certificate")
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: l.sec.TLS.CAs(), Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("tls: the peer's certificate: %w", err)
	}
	var ids []string
	for _, id := range candidates {
		host, _, err := net.SplitHostPort(id)
		if err != nil {
			continue
		}
		if leaf.VerifyHostname(host) == nil || (leaf.Subject.CommonName != "" && leaf.Subject.CommonName == host) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// refuse counts a refused connection and logs it (at most one line a
// second: a storm of forged connections must not flood the log).
func (l *secureLayer) refuse(c net.Conn, dir string, err error) {
	n := l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(time.Second) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn().Err(err).Str("remote", c.RemoteAddr().String()).Str("direction", dir).Int64("refused_total", n).
		Msg("controller raft: connection refused (not an authenticated peer)")
}

// serverConn is an accepted connection: its first Read or Write runs the
// handshake; nothing reaches raft before it passed.
type serverConn struct {
	net.Conn // the raw connection (Close, addresses, deadlines)
	l        *secureLayer
	once     sync.Once
	inner    net.Conn // after the handshake: what raft reads and writes
	err      error
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		c.inner, c.err = c.l.serverHandshake(c.Conn)
		if c.err != nil {
			c.l.refuse(c.Conn, "accept", c.err)
			_ = c.Conn.Close()
			// io.EOF: raft's handleConn ends quietly on it; the refusal
			// was logged (rate-limited) above.
			c.err = io.EOF
		}
	})
	return c.err
}

// Read implements net.Conn.
func (c *serverConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.inner.Read(p)
}

// Write implements net.Conn.
func (c *serverConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.inner.Write(p)
}
