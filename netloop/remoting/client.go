package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// DefaultWriteTimeout bounds a write when neither the context nor
// ClientOptions.WriteTimeout gives a deadline, and a Go request given no
// timeout.
const DefaultWriteTimeout = 10 * time.Second

// ClientOptions configures a Client. The zero value is usable.
type ClientOptions struct {
	// MaxFrame bounds the total length of frames read; zero means
	// DefaultMaxFrame. A larger frame closes the connection.
	MaxFrame int
	// OnRequest handles requests the server sends over this connection
	// (commands without FlagResponse). It runs on its own goroutine per
	// request, which Close waits for, so it must return promptly. A non-nil
	// result is sent back as the response, with the request's opaque and
	// FlagResponse set, unless the request was oneway. When nil, server
	// requests are logged and dropped.
	OnRequest func(req *Command) *Command
	// Logger receives connection-level events. The zero value logs nothing.
	Logger zerolog.Logger
	// WriteTimeout bounds each write to the socket (a write may be cut
	// after half of it: the deadline is moved only once half is used);
	// zero means DefaultWriteTimeout. A write that does not finish in time
	// closes the connection.
	WriteTimeout time.Duration
	// MaxQueuedBytes bounds the encoded frames waiting for the writer; zero
	// means DefaultMaxQueuedBytes. A request that finds the queue full waits
	// (within its deadline) until the writer takes it: back-pressure
	// instead of unbounded memory when the peer reads slowly. One frame
	// larger than the bound still goes when the queue is below it.
	MaxQueuedBytes int
	// Sign, when set, signs every request the client sends (Invoke,
	// InvokeWithin, Go, GoTransient, InvokeOneway) just before it is
	// encoded, once its opaque and flags are set: it is handed the request
	// and its header fields as they go on the wire, sorted by key (an
	// Ext's fields written out, or ExtFields), and returns the fields to
	// send instead, e.g. with AccessKey and Signature added
	// (netloop/auth.Credentials.Signer), in any order and with no key
	// twice. The caller's command is left as it was. It runs on the sending
	// goroutine, possibly on many at once, and must not keep fields or
	// change req. Answers to server requests and WriteRaw are not signed.
	Sign func(req *Command, fields []Field) []Field
	// TLS, when set, makes Dial speak TLS over the connection with this
	// client configuration (crypto/tls). An empty ServerName is taken from
	// the host of the address dialed (certificates are verified against
	// it unless InsecureSkipVerify), and MinVersion defaults to TLS 1.2.
	// The handshake is bounded by Dial's ctx, and by WriteTimeout when ctx
	// has no deadline. Deadlines and bounds are the same as in plaintext;
	// Close closes the socket without waiting to send TLS's close_notify.
	TLS *tls.Config
}

// DefaultMaxQueuedBytes is the default of ClientOptions.MaxQueuedBytes.
const DefaultMaxQueuedBytes = 32 << 20

// Client is a pipelined RemotingCommand client over one TCP connection.
// All methods are safe for concurrent use.
//
// Requests are encoded at once into a shared output buffer (a request's
// Ext writes its header fields there directly). A caller that waits for
// its answer writes the buffer itself unless another goroutine is already
// writing, in which case that one writes the new frames too before it lets
// go: a lone request costs no goroutine hand-off, and under load many
// frames share one write. An async request (Go) with others in flight
// wakes the writer goroutine instead, so that a sender that does not wait
// piles many frames up behind one write (see flush). Any number of
// requests may be in flight; responses are matched to requests by opaque,
// so they may arrive in any order. The output buffer is swapped with the
// writer's spare buffer on each write, so the two are reused rather than
// allocated per frame (buffers grown past maxKeptWriteBuf by a large body
// are dropped after use).
//
// A request costs no allocation of its own: pending calls are kept by
// value, one timer per connection serves every deadline, Invoke's waits
// are pooled. Frames are read in place from the read buffer and binary
// headers decoded into one reused command, which GoTransient callers get
// on loan and others as a copy.
//
// Goroutines: one reader, one writer, and one per server-initiated request
// being served; Close stops and waits for all of them.
type Client struct {
	conn net.Conn // what frames are read from and written to
	raw  net.Conn // the socket under conn (conn itself in plaintext)
	addr string
	opts ClientOptions
	log  zerolog.Logger

	opaque atomic.Int32

	// out holds encoded frames not yet handed to the writer.
	out struct {
		sync.Mutex
		buf     []byte
		drained chan struct{} // closed when the writer takes buf; nil when nobody waits
		ext     ExtEncoder    // encodes the Ext of requests
	}
	// wmu is held by the goroutine writing to the socket.
	wmu   sync.Mutex
	spare []byte // the writer's other buffer (guarded by wmu)
	// wdeadline is the connection's write deadline (monoNow scale;
	// guarded by wmu).
	wdeadline int64
	// kick wakes the writer goroutine, which flushes what is queued.
	kick chan struct{}
	// pending is len(calls.m), readable without the lock.
	pending atomic.Int32

	// calls holds the requests waiting for a response, by opaque. m is nil
	// once the connection is gone. One timer serves every deadline: it is
	// armed for the earliest one (armedAt) and, when it fires, fails the
	// calls that are due and re-arms for the next (see sweep).
	calls struct {
		sync.Mutex
		m       map[int32]call
		timer   *time.Timer
		armedAt int64 // deadline the timer is armed for (monotonic ns), 0 when idle
	}

	closeOnce sync.Once
	closeErr  error         // why the connection ended; written before done is closed
	done      chan struct{} // closed when the connection is gone
	wg        sync.WaitGroup
}

// call is one request waiting for its response. Calls are kept by value,
// so a request costs no allocation of its own.
type call struct {
	code     int32
	done     func(*Command, error)
	deadline int64         // monotonic ns (see monoNow); 0 when a context bounds the wait
	timeout  time.Duration // what the deadline was set from, for the error
	// transient: done takes the response on loan (GoTransient).
	transient bool
}

// clockBase anchors monoNow.
var clockBase = time.Now()

// monoNow reads the monotonic clock in nanoseconds since clockBase (always
// positive).
func monoNow() int64 { return int64(time.Since(clockBase)) + 1 }

// minSweepGap is the shortest time between two sweeps of expired calls, so
// that many calls expiring one after another share a sweep.
const minSweepGap = int64(time.Millisecond)

// maxKeptWriteBuf is the largest output buffer a Client keeps between
// writes; larger ones (big bodies) are dropped after use.
const maxKeptWriteBuf = 256 << 10

// Addr returns the address the client dialed.
func (c *Client) Addr() string { return c.addr }

// Pending returns the number of requests waiting for a response.
func (c *Client) Pending() int {
	c.calls.Lock()
	defer c.calls.Unlock()
	return len(c.calls.m)
}

// Invoke sends req and waits for the response with the same opaque, until
// ctx ends or the connection closes. It assigns req.Opaque (from a per-client
// counter starting at 1) and clears the response and oneway flags, so req
// must not be shared by concurrent calls. req is encoded before Invoke
// starts waiting; the caller may reuse it once Invoke returns.
func (c *Client) Invoke(ctx context.Context, req *Command) (*Command, error) {
	return c.InvokeWithin(ctx, req, 0)
}

// InvokeWithin is Invoke with a deadline of its own besides ctx: when no
// response came within timeout it fails with ErrTimeout (which also
// matches context.DeadlineExceeded). Zero or less means ctx alone bounds
// the wait. It costs no timer, channel or closure of its own: every
// request of a Client shares one deadline timer, and the waits are pooled.
func (c *Client) InvokeWithin(ctx context.Context, req *Command, timeout time.Duration) (*Command, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("remoting invoke code %d on %s: %w", req.Code, c.addr, err)
	}
	w := waiters.Get().(*waiter)
	op, err := c.start(ctx, req, timeout, w.done, 0)
	if err != nil {
		waiters.Put(w)
		return nil, err
	}
	select {
	case r := <-w.ch:
		waiters.Put(w)
		return r.resp, r.err
	case <-ctx.Done():
		if _, ok := c.take(op); !ok { // answered (or failed) meanwhile: that result wins
			r := <-w.ch
			waiters.Put(w)
			return r.resp, r.err
		}
		waiters.Put(w) // its done will not run: the call is gone
		return nil, fmt.Errorf("remoting invoke code %d opaque %d on %s: %w", req.Code, op, c.addr, ctx.Err())
	}
}

// waiter is a reusable wait for one response: done sends to ch, which
// holds one result.
type waiter struct {
	ch   chan waitResult
	done func(*Command, error)
}

// waitResult is what a waiter receives.
type waitResult struct {
	resp *Command
	err  error
}

// waiters pools waiters. A waiter goes back only once its channel is
// drained and its done cannot run again.
var waiters = sync.Pool{New: func() any {
	w := &waiter{ch: make(chan waitResult, 1)}
	w.done = func(resp *Command, err error) { w.ch <- waitResult{resp, err} }
	return w
}}

// Go sends req and calls done exactly once with its response, or with an
// error: ErrTimeout (which also matches context.DeadlineExceeded) when no
// response came within timeout (zero or less means DefaultWriteTimeout),
// ErrClosed when the connection is gone. done runs on the reader goroutine,
// a timer goroutine or the goroutine that closes the client, so it must not
// block and must not call Close. If Go returns an error, done is not called.
// Like Invoke, Go assigns req.Opaque and encodes req before returning.
func (c *Client) Go(req *Command, timeout time.Duration, done func(*Command, error)) error {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	_, err := c.start(nil, req, timeout, done, startAsync)
	return err
}

// GoTransient is Go for a caller that does not keep the response: the
// *Command handed to done, its ExtFields map and its Body are the client's
// and are reused for the next response once done returns (the strings in
// it may be kept). A response then costs one allocation (its header
// strings) instead of a command, a map and copies. Errors are as for Go.
func (c *Client) GoTransient(req *Command, timeout time.Duration, done func(*Command, error)) error {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	_, err := c.start(nil, req, timeout, done, startAsync|startTransient)
	return err
}

// Cancel forgets the request with the given opaque (as assigned to
// req.Opaque by Go or GoTransient) if it still waits for its answer: its
// done will not be called, and a late answer is dropped. It reports
// whether the request was still waiting; when it was not, done has run or
// is running.
func (c *Client) Cancel(opaque int32) bool {
	_, ok := c.take(opaque)
	return ok
}

// startFlags say how a request is sent.
type startFlags int

const (
	// startAsync: the caller does not wait for the answer (see flush).
	startAsync startFlags = 1 << iota
	// startTransient: done takes the response on loan (GoTransient).
	startTransient
)

// start registers a call for req and queues it (see enqueue). With a
// positive timeout the call fails when it runs out (see sweep). ctx (or,
// when nil, the timeout) bounds a wait for room in the output queue. It
// returns the opaque assigned.
func (c *Client) start(ctx context.Context, req *Command, timeout time.Duration, done func(*Command, error),
	flags startFlags) (int32, error) {
	op := c.opaque.Add(1)
	req.Opaque = op
	req.Flag &^= FlagResponse | FlagOneway
	cl := call{code: req.Code, done: done, transient: flags&startTransient != 0}
	if timeout > 0 {
		cl.deadline, cl.timeout = monoNow()+int64(timeout), timeout
	}
	c.calls.Lock()
	if c.calls.m == nil {
		c.calls.Unlock()
		return op, c.failure(req.Code, op)
	}
	c.calls.m[op] = cl
	c.pending.Store(int32(len(c.calls.m)))
	if cl.deadline != 0 && (c.calls.armedAt == 0 || cl.deadline < c.calls.armedAt) {
		c.armLocked(cl.deadline, cl.deadline-monoNow())
	}
	c.calls.Unlock()
	wire, scratch := c.wire(req)
	err := c.enqueue(ctx, timeout, wire, flags&startAsync != 0)
	scratch.release()
	if err != nil {
		if _, ok := c.take(op); ok { // still ours: the caller gets the error, done is not called
			return op, err
		}
		return op, nil // the connection failed meanwhile and done already ran
	}
	return op, nil
}

// armLocked arms the deadline timer to fire after d, for the deadline at.
// calls should be locked.
func (c *Client) armLocked(at int64, d int64) {
	c.calls.armedAt = at
	if c.calls.timer == nil {
		c.calls.timer = time.AfterFunc(time.Duration(d), c.sweep)
		return
	}
	c.calls.timer.Reset(time.Duration(d))
}

// sweep runs when the deadline timer fires: it fails every call whose
// deadline has passed and arms the timer for the earliest deadline left
// (at least minSweepGap ahead). A call answered before its deadline costs
// the sweep nothing but a look when the timer fires anyway.
func (c *Client) sweep() {
	now := monoNow()
	var expired []expiredCall
	c.calls.Lock()
	if c.calls.m == nil {
		c.calls.Unlock()
		return
	}
	next := int64(0)
	for op, cl := range c.calls.m {
		switch {
		case cl.deadline == 0:
		case cl.deadline <= now:
			expired = append(expired, expiredCall{op, cl})
			delete(c.calls.m, op)
			c.pending.Store(int32(len(c.calls.m)))
		case next == 0 || cl.deadline < next:
			next = cl.deadline
		}
	}
	c.calls.armedAt = 0
	if next != 0 {
		c.armLocked(next, max(next-now, minSweepGap))
	}
	c.calls.Unlock()
	for _, e := range expired {
		e.done(nil, fmt.Errorf("remoting request code %d opaque %d to %s: no response within %v: %w (%w)",
			e.code, e.op, c.addr, e.timeout, ErrTimeout, context.DeadlineExceeded))
	}
}

// expiredCall is a call the sweep failed, with its opaque.
type expiredCall struct {
	op int32
	call
}

// InvokeOneway sends req with FlagOneway set and does not wait for an
// answer. It assigns req.Opaque like Invoke. A nil error means the frame
// was queued for writing, not that it reached the peer.
func (c *Client) InvokeOneway(req *Command) error {
	req.Opaque = c.opaque.Add(1)
	req.Flag = req.Flag&^FlagResponse | FlagOneway
	select {
	case <-c.done:
		return c.failure(req.Code, req.Opaque)
	default:
	}
	wire, scratch := c.wire(req)
	err := c.enqueue(nil, c.opts.WriteTimeout, wire, false)
	scratch.release()
	return err
}

// WriteRaw queues b for writing unchanged; tests use it to send malformed
// input.
func (c *Client) WriteRaw(b []byte) error {
	select {
	case <-c.done:
		return fmt.Errorf("remoting write to %s: %w (%w)", c.addr, ErrClosed, c.closeErr)
	default:
	}
	if err := c.waitRoom(nil, c.opts.WriteTimeout); err != nil {
		return err
	}
	c.out.buf = append(c.out.buf, b...)
	c.out.Unlock()
	c.flush(false)
	return nil
}

// Close closes the connection. Pending requests fail with an error
// wrapping ErrClosed. It waits for the client's goroutines to stop, so it
// must not be called from a Go callback or an OnRequest handler.
func (c *Client) Close() error {
	c.shutdown(errors.New("closed by caller"))
	c.wg.Wait()
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
func (c *Client) failure(code, op int32) error {
	<-c.done
	return fmt.Errorf("remoting invoke code %d opaque %d on %s: %w (%w)", code, op, c.addr, ErrClosed, c.closeErr)
}

// take removes and returns the call of op; ok is false if it is no longer
// pending. Its deadline needs no cleanup: the timer finds nothing due.
func (c *Client) take(op int32) (call, bool) {
	c.calls.Lock()
	cl, ok := c.calls.m[op]
	if ok {
		delete(c.calls.m, op)
		c.pending.Store(int32(len(c.calls.m)))
	}
	c.calls.Unlock()
	return cl, ok
}

// serve runs OnRequest for a server-initiated request and queues its answer.
func (c *Client) serve(req *Command) {
	if c.opts.OnRequest == nil {
		c.log.Debug().Int32("code", req.Code).Int32("opaque", req.Opaque).Msg("remoting server request ignored: no handler")
		return
	}
	resp := c.onRequest(req)
	if resp == nil || req.IsOneway() {
		return
	}
	resp.Opaque = req.Opaque
	resp.Flag |= FlagResponse
	select {
	case <-c.done:
		return
	default:
	}
	if err := c.enqueue(nil, c.opts.WriteTimeout, resp, false); err != nil {
		c.log.Warn().Err(err).Int32("code", req.Code).Int32("opaque", req.Opaque).Msg("remoting answer to server request failed")
	}
}

// shutdown closes the connection once, records why, and fails every
// pending request.
func (c *Client) shutdown(cause error) {
	c.closeOnce.Do(func() {
		_ = c.raw.Close() // a *tls.Conn's Close could wait to send close_notify
		c.closeErr = cause
		c.calls.Lock()
		pending := c.calls.m
		c.calls.m = nil
		c.pending.Store(0)
		if c.calls.timer != nil {
			c.calls.timer.Stop()
		}
		c.calls.Unlock()
		close(c.done)
		for op, cl := range pending {
			cl.done(nil, fmt.Errorf("remoting invoke code %d opaque %d on %s: %w (%w)", cl.code, op, c.addr, ErrClosed, cause))
		}
		c.log.Debug().Err(cause).Msg("remoting client connection closed")
	})
}
