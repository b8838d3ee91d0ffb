package remoting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// DefaultWriteTimeout bounds a write when neither the context nor
// ClientOptions.WriteTimeout gives a deadline.
const DefaultWriteTimeout = 10 * time.Second

// ClientOptions configures a Client. The zero value is usable.
type ClientOptions struct {
	// MaxFrame bounds the total length of frames read; zero means
	// DefaultMaxFrame. A larger frame closes the connection.
	MaxFrame int
	// OnRequest handles requests the server sends over this connection
	// (commands without FlagResponse). It runs on its own goroutine per
	// request. A non-nil result is sent back as the response, with the
	// request's opaque and FlagResponse set, unless the request was oneway.
	// When nil, server requests are logged and dropped.
	OnRequest func(req *Command) *Command
	// Logger receives connection-level events. The zero value logs nothing.
	Logger zerolog.Logger
	// WriteTimeout bounds each write that has no context deadline; zero
	// means DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Client is a blocking RemotingCommand client over one TCP connection.
// All methods are safe for concurrent use. Responses are matched to
// requests by opaque, so they may arrive in any order.
type Client struct {
	conn net.Conn
	addr string
	opts ClientOptions
	log  zerolog.Logger

	opaque atomic.Int32

	// wr serializes writes: a frame must reach the socket in one piece.
	wr struct {
		sync.Mutex
		buf []byte // reused encode buffer
	}

	// pending holds the waiters of Invoke calls by opaque. m is nil once
	// the connection is gone.
	pending struct {
		sync.Mutex
		m map[int32]chan *Command
	}

	closeOnce  sync.Once
	closeErr   error         // why the connection ended; written before done is closed
	done       chan struct{} // closed when the connection is gone
	readerDone chan struct{} // closed when the read loop has returned
}

// maxKeptWriteBuf is the largest encode buffer a Client keeps between
// writes; larger ones (big bodies) are dropped after use.
const maxKeptWriteBuf = 256 << 10

// Dial connects to addr ("host:port") and starts reading responses.
func Dial(ctx context.Context, addr string, opts ClientOptions) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remoting dial %s: %w", addr, err)
	}
	return newClient(conn, addr, opts), nil
}

// newClient wraps an established connection and starts its read loop.
func newClient(conn net.Conn, addr string, opts ClientOptions) *Client {
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = DefaultMaxFrame
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	c := &Client{
		conn:       conn,
		addr:       addr,
		opts:       opts,
		log:        opts.Logger.With().Str("remote", addr).Logger(),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	c.pending.m = make(map[int32]chan *Command)
	go c.readLoop()
	return c
}

// Addr returns the address the client dialed.
func (c *Client) Addr() string { return c.addr }

// Invoke sends req and waits for the response with the same opaque, until
// ctx ends or the connection closes. It assigns req.Opaque (from a per-client
// counter starting at 1) and clears the response and oneway flags, so req
// must not be shared by concurrent calls.
func (c *Client) Invoke(ctx context.Context, req *Command) (*Command, error) {
	if err := ctx.Err(); err != nil { // a write with a past deadline would cost the connection
		return nil, fmt.Errorf("remoting invoke code %d on %s: %w", req.Code, c.addr, err)
	}
	req.Opaque = c.opaque.Add(1)
	req.Flag &^= FlagResponse | FlagOneway
	ch := make(chan *Command, 1)
	c.pending.Lock()
	if c.pending.m == nil {
		c.pending.Unlock()
		return nil, c.failure(req)
	}
	c.pending.m[req.Opaque] = ch
	c.pending.Unlock()
	defer func() {
		c.pending.Lock()
		if c.pending.m != nil {
			delete(c.pending.m, req.Opaque)
		}
		c.pending.Unlock()
	}()

	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(c.opts.WriteTimeout)
	}
	if err := c.write(req, deadline); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("remoting invoke code %d opaque %d on %s: %w", req.Code, req.Opaque, c.addr, ctx.Err())
	case <-c.done:
		select { // a response that raced with the close still counts
		case resp := <-ch:
			return resp, nil
		default:
			return nil, c.failure(req)
		}
	}
}

// InvokeOneway sends req with FlagOneway set and does not wait for an
// answer. It assigns req.Opaque like Invoke.
func (c *Client) InvokeOneway(req *Command) error {
	req.Opaque = c.opaque.Add(1)
	req.Flag = req.Flag&^FlagResponse | FlagOneway
	return c.write(req, time.Now().Add(c.opts.WriteTimeout))
}

// WriteRaw writes b to the connection unchanged; tests use it to send
// malformed input.
func (c *Client) WriteRaw(b []byte) error {
	c.wr.Lock()
	defer c.wr.Unlock()
	return c.writeLocked(b, time.Now().Add(c.opts.WriteTimeout))
}

// Close closes the connection. Pending invocations fail with an error
// wrapping ErrClosed. It waits for the read loop to stop.
func (c *Client) Close() error {
	c.shutdown(errors.New("closed by caller"))
	<-c.readerDone
	return nil
}

// Done returns a channel that is closed when the connection is gone, by
// Close, by the peer or by an error.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, or nil while it is up.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.closeErr
	default:
		return nil
	}
}

// failure builds the error for a request that could not complete because
// the connection is gone.
func (c *Client) failure(req *Command) error {
	<-c.done
	return fmt.Errorf("remoting invoke code %d opaque %d on %s: %w (%w)", req.Code, req.Opaque, c.addr, ErrClosed, c.closeErr)
}

// write encodes cmd and writes it with the given deadline.
func (c *Client) write(cmd *Command, deadline time.Time) error {
	c.wr.Lock()
	defer c.wr.Unlock()
	buf, err := AppendFrame(c.wr.buf[:0], cmd)
	if err != nil {
		return fmt.Errorf("remoting write code %d to %s: %w", cmd.Code, c.addr, err)
	}
	err = c.writeLocked(buf, deadline)
	if cap(buf) <= maxKeptWriteBuf {
		c.wr.buf = buf[:0]
	} else {
		c.wr.buf = nil
	}
	return err
}

// writeLocked writes b. A failed write may have left part of a frame on
// the wire, so it closes the connection. Lock should be held (c.wr).
func (c *Client) writeLocked(b []byte, deadline time.Time) error {
	select {
	case <-c.done:
		return fmt.Errorf("remoting write to %s: %w (%w)", c.addr, ErrClosed, c.closeErr)
	default:
	}
	if err := c.conn.SetWriteDeadline(deadline); err != nil {
		c.shutdown(err)
		return fmt.Errorf("remoting write to %s: %w (%w)", c.addr, ErrClosed, err)
	}
	if _, err := c.conn.Write(b); err != nil {
		c.shutdown(err)
		return fmt.Errorf("remoting write to %s: %w (%w)", c.addr, ErrClosed, err)
	}
	return nil
}

// readLoop reads frames until the connection fails, delivering responses
// to waiters and requests to OnRequest.
func (c *Client) readLoop() {
	defer close(c.readerDone)
	br := bufio.NewReaderSize(c.conn, 64<<10)
	for {
		cmd, err := ReadFrame(br, c.opts.MaxFrame)
		if err != nil {
			c.shutdown(err)
			return
		}
		if cmd.IsResponse() {
			c.deliver(cmd)
			continue
		}
		go c.serve(cmd)
	}
}

// deliver hands a response to its waiter; unknown opaques (late answers
// to timed-out or oneway requests) are dropped.
func (c *Client) deliver(resp *Command) {
	c.pending.Lock()
	ch := c.pending.m[resp.Opaque]
	delete(c.pending.m, resp.Opaque)
	c.pending.Unlock()
	if ch == nil {
		c.log.Debug().Int32("opaque", resp.Opaque).Int32("code", resp.Code).Msg("remoting response without waiter dropped")
		return
	}
	ch <- resp // buffered, one response per opaque
}

// serve runs OnRequest for a server-initiated request and writes its answer.
func (c *Client) serve(req *Command) {
	if c.opts.OnRequest == nil {
		c.log.Debug().Int32("code", req.Code).Int32("opaque", req.Opaque).Msg("remoting server request ignored: no handler")
		return
	}
	resp := c.opts.OnRequest(req)
	if resp == nil || req.IsOneway() {
		return
	}
	resp.Opaque = req.Opaque
	resp.Flag |= FlagResponse
	if err := c.write(resp, time.Now().Add(c.opts.WriteTimeout)); err != nil {
		c.log.Warn().Err(err).Int32("code", req.Code).Int32("opaque", req.Opaque).Msg("remoting answer to server request failed")
	}
}

// shutdown closes the connection once, records why, fails new invocations
// and wakes all waiters.
func (c *Client) shutdown(cause error) {
	c.closeOnce.Do(func() {
		_ = c.conn.Close()
		c.closeErr = cause
		c.pending.Lock()
		c.pending.m = nil
		c.pending.Unlock()
		close(c.done)
		c.log.Debug().Err(cause).Msg("remoting client connection closed")
	})
}
