package grpcgw

// The port's transport: permissive TLS (the first byte of a connection
// decides: 0x16 is a TLS handshake record, anything else plaintext h2c),
// restricted by the TLS mode, as a grpc-go TransportCredentials.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/wheelmq/wheelmq/netloop"
)

// tlsRecordHandshake is the first byte of a TLS connection (a handshake
// record carrying the client hello).
const tlsRecordHandshake = 0x16

// errWrongTransport refuses a connection the TLS mode does not accept.
var errWrongTransport = errors.New("grpc gateway: transport not accepted by the tls mode")

// sniffCreds serves TLS and plaintext on one port.
type sniffCreds struct {
	mode    netloop.TLSMode
	config  *tls.Config // with GetConfigForClient or certificates; nil: no TLS
	timeout time.Duration
	onDeny  func(tlsConn bool)
}

// newSniffCreds builds the port's credentials; base is the process's TLS
// server configuration (nil when TLS is disabled).
func newSniffCreds(mode netloop.TLSMode, base *tls.Config, timeout time.Duration, onDeny func(bool)) *sniffCreds {
	var cfg *tls.Config
	if base != nil {
		cfg = base.Clone()
		cfg.NextProtos = []string{"h2"}
		if get := base.GetConfigForClient; get != nil {
			cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
				c, err := get(h)
				if err != nil || c == nil {
					return c, err
				}
				c = c.Clone()
				c.NextProtos = []string{"h2"} // grpc-go clients insist on ALPN h2
				return c, nil
			}
		}
	}
	if cfg == nil {
		mode = netloop.TLSDisabled
	}
	return &sniffCreds{mode: mode, config: cfg, timeout: timeout, onDeny: onDeny}
}

// ServerHandshake reads the connection's first byte and serves TLS or
// plaintext accordingly, within the handshake timeout.
func (s *sniffCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	deadline := time.Now().Add(s.timeout)
	if err := raw.SetReadDeadline(deadline); err != nil {
		return nil, nil, fmt.Errorf("grpc gateway handshake: %w", err)
	}
	br := bufio.NewReader(raw)
	first, err := br.Peek(1)
	if err != nil {
		return nil, nil, fmt.Errorf("grpc gateway handshake: read first byte: %w", err)
	}
	conn := &peekedConn{Conn: raw, r: br}
	isTLS := first[0] == tlsRecordHandshake
	if (isTLS && s.mode == netloop.TLSDisabled) || (!isTLS && s.mode == netloop.TLSEnforcing) {
		if s.onDeny != nil {
			s.onDeny(isTLS)
		}
		return nil, nil, fmt.Errorf("%w (mode %s, tls %t)", errWrongTransport, s.mode, isTLS)
	}
	if !isTLS {
		if err := raw.SetReadDeadline(time.Time{}); err != nil {
			return nil, nil, fmt.Errorf("grpc gateway handshake: %w", err)
		}
		return conn, plainInfo{credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
	}
	tc := tls.Server(conn, s.config)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("grpc gateway tls handshake: %w", err)
	}
	if err := raw.SetReadDeadline(time.Time{}); err != nil {
		return nil, nil, fmt.Errorf("grpc gateway handshake: %w", err)
	}
	return tc, credentials.TLSInfo{State: tc.ConnectionState(),
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

// ClientHandshake is not used: the credentials are a server's.
func (s *sniffCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("grpc gateway: server-side credentials only")
}

// Info describes the credentials.
func (s *sniffCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "wheelmq-sniff", ServerName: ""}
}

// Clone returns a copy.
func (s *sniffCreds) Clone() credentials.TransportCredentials { c := *s; return &c }

// OverrideServerName is not used by a server.
func (s *sniffCreds) OverrideServerName(string) error { return nil }

// plainInfo is the AuthInfo of a plaintext connection.
type plainInfo struct{ credentials.CommonAuthInfo }

// AuthType names plaintext.
func (plainInfo) AuthType() string { return "insecure" }

// peekedConn reads through the buffer that holds the sniffed byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

// Read reads what was buffered first, then the socket.
func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// countingListener counts open connections for the metrics.
type countingListener struct {
	net.Listener
	m *metrics
}

// Accept counts the connection until it closes.
func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.m.conns.Inc()
	l.m.accepted.Inc()
	return &countedConn{Conn: c, m: l.m}, nil
}

// countedConn decrements the open connection gauge once on Close.
type countedConn struct {
	net.Conn
	m    *metrics
	once sync.Once
}

// Close closes the socket and uncounts it.
func (c *countedConn) Close() error {
	c.once.Do(func() { c.m.conns.Dec() })
	return c.Conn.Close()
}
