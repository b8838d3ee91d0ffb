package remoting

// Making a Client: the dial, the TLS handshake, and the goroutines.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// Dial connects to addr ("host:port") and starts reading responses. ctx
// bounds the connection attempt only. With ClientOptions.TLS it also
// completes the TLS handshake.
func Dial(ctx context.Context, addr string, opts ClientOptions) (*Client, error) {
	conn, err := dialConn(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	return newClient(conn, addr, opts), nil
}

// newClient wraps an established connection (a *tls.Conn once its
// handshake is done, or a plain one) and starts its reader.
func newClient(conn net.Conn, addr string, opts ClientOptions) *Client {
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = DefaultMaxFrame
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	c := &Client{
		conn: conn,
		raw:  raw,
		addr: addr,
		opts: opts,
		log:  opts.Logger.With().Str("remote", addr).Logger(),
		done: make(chan struct{}),
		kick: make(chan struct{}, 1),
	}
	c.calls.m = make(map[int32]call)
	c.goOwned("reader", c.readLoop)
	c.goOwned("writer", c.writeLoop)
	return c
}

// dialConn connects to addr within ctx and, with opts.TLS, completes the
// TLS handshake (see ClientOptions.TLS for its bounds).
func dialConn(ctx context.Context, addr string, opts ClientOptions) (net.Conn, error) {
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remoting dial %s: %w", addr, err)
	}
	if opts.TLS == nil {
		return raw, nil
	}
	cfg := opts.TLS.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	hctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		limit := opts.WriteTimeout
		if limit <= 0 {
			limit = DefaultWriteTimeout
		}
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("remoting dial %s: %w", addr, fmt.Errorf("TLS handshake: %w", err))
	}
	return tc, nil
}
