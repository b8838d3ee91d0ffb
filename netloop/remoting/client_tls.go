package remoting

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// handshakeTLS runs a TLS client handshake over conn within ctx and
// returns the TLS connection; on failure it closes conn. When cfg names no
// server and verifies the server, the host of addr is the name verified
// (and sent, unless it is an IP address).
func handshakeTLS(ctx context.Context, conn net.Conn, addr string, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("remoting dial %s: tls handshake: %w", addr, err)
	}
	return tc, nil
}

// InsecureTLS is the client TLS configuration of RocketMQ's clients (the
// official Go client's WithTls, the Java client's default test mode): TLS
// 1.2 or newer, the server's certificate not verified. Give a
// configuration with RootCAs to verify it.
func InsecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // RocketMQ's client behaviour, documented
}
