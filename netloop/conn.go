package netloop

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// FrameAppender appends one encoded frame to dst and returns the extended
// slice; on error it returns dst unchanged. Conn calls it while it holds
// the connection's outbox, so frames are written whole and in order: it
// must not block or call back into the Conn.
type FrameAppender interface {
	AppendFrame(dst []byte) ([]byte, error)
}

// commandFrame is the FrameAppender of a Command.
type commandFrame struct{ cmd *remoting.Command }

func (f commandFrame) AppendFrame(dst []byte) ([]byte, error) {
	return remoting.AppendFrame(dst, f.cmd)
}

// Conn is one client connection. Every method is safe from any goroutine.
// A Conn stays valid after the connection closes; Send then fails.
type Conn struct {
	id     uint64
	gc     gnet.Conn
	srv    *Server
	remote string
	local  string
	// remoteAP is remote as a netip.AddrPort (IPv4 unmapped); zero when
	// the address is not TCP.
	remoteAP netip.AddrPort
	// fd is the socket, for direct writes (see writeDirect); -1 when every
	// write goes through the event loop.
	fd int

	ctx atomic.Pointer[ctxBox]

	// state guards closed. Send and Close hold the read lock while they
	// queue work on gnet or write to the socket, and OnClose takes the
	// write lock to set closed before gnet closes the socket, so once
	// OnClose has run no call can reach the (soon closed) descriptor or
	// event loop.
	state struct {
		sync.RWMutex
		closed bool
	}

	// badFrame is why the server closed the connection, if it did. Only
	// touched on the connection's event loop.
	badFrame error
	// skip is the bytes of an answered oversize request still to be
	// discarded (oversize.go); touched only where its frames are drained.
	skip int64

	// pending counts the bytes of frames queued by SendFrame and not yet
	// taken by the socket or handed to gnet; loopBuf is what gnet held
	// for the socket when the event loop last looked (flush, OnTraffic,
	// the slow-connection check). Their sum is the buffered output the
	// output caps apply to (see OutputBuffered and slow.go).
	pending atomic.Int64
	loopBuf atomic.Int64
	// overSince is when the buffered output last rose above the soft cap
	// (unix ns), 0 while it is at or below it.
	overSince atomic.Int64
	// heard is set once the connection sent a request byte (idle.go).
	heard atomic.Bool

	// out is the connection's outbox. Frames are appended to buf; whoever
	// finds no write under way writes everything queued, in one write
	// (see Send). Invariant: when buf is not empty, writing or scheduled
	// is set, or an Outbox holding the connection will flush it.
	out struct {
		sync.Mutex
		buf       []byte // frames waiting to be written
		spare     []byte // the other buffer, reused after each write
		frames    int64  // frames in buf
		writing   bool   // a goroutine (or the loop's flush) is writing and rechecks buf before it stops
		scheduled bool   // a flush task is queued on the event loop
		// viaLoop is set when gnet may hold bytes the socket did not
		// take: writes then go through the event loop (gnet keeps its
		// own buffer in order) until a flush finds that buffer empty.
		viaLoop bool
		// closing is set once the connection is being closed for its
		// unread output (or is closed): nothing more is queued.
		closing bool
		// gone is set by OnClose: the accounting is settled and loopBuf
		// is no longer refreshed.
		gone bool
	}
	flushTask gnet.RunnableFunc
	checkTask gnet.RunnableFunc // checkSlow, queued by the sweep
	idleTask  gnet.RunnableFunc // closeSilent, queued by the sweep

	// xport is what the connection speaks (a transport): unknown until its
	// first bytes told, on a port that takes TLS. tls is its TLS session,
	// set before xport says TLS. wire is xport as the event loop knows it
	// (loop only: OnTraffic's one check on the plaintext path).
	xport atomic.Uint32
	tls   *tlsSession
	wire  transport
}

// ctxBox wraps a context value so that any value, including nil, can be
// stored atomically.
type ctxBox struct{ v any }

// ID returns the connection's id, unique within its server.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the peer's "ip:port", captured when the connection
// opened.
func (c *Conn) RemoteAddr() string { return c.remote }

// RemoteAddrPort returns the peer's address as a netip.AddrPort, with
// IPv4-mapped IPv6 addresses unmapped (the form RocketMQ's born host
// uses). It is the zero AddrPort if the address was not TCP.
func (c *Conn) RemoteAddrPort() netip.AddrPort { return c.remoteAP }

// LocalAddr returns the local "ip:port", captured when the connection
// opened.
func (c *Conn) LocalAddr() string { return c.local }

// Context returns the value last given to SetContext, or nil.
func (c *Conn) Context() any {
	if b := c.ctx.Load(); b != nil {
		return b.v
	}
	return nil
}

// SetContext stores a per-connection value for the handler.
func (c *Conn) SetContext(v any) { c.ctx.Store(&ctxBox{v: v}) }

// Send encodes cmd and writes it; see SendFrame.
func (c *Conn) Send(cmd *remoting.Command) error { return c.SendFrame(commandFrame{cmd}) }

// SendFrame appends the frame f encodes to the connection's outbox and
// writes it. It returns once the frame is written or queued; frames sent
// from one goroutine go out in order. Frames queued while a write is under
// way go out with the next one, in one write.
//
// The write happens on the calling goroutine, straight to the socket,
// when nothing else is being written and gnet holds no unsent bytes of
// the connection (the socket is non-blocking: what it does not take is
// handed to the event loop, and so are writes on platforms without direct
// writes); otherwise it is left to the writer under way or to a flush task
// on the connection's event loop. A stage answering a request thus needs
// no hop through the event loop. After the connection is closed it
// returns an error wrapping ErrConnClosed.
func (c *Conn) SendFrame(f FrameAppender) error {
	if x := transport(c.xport.Load()); x != transportPlain {
		if x == transportTLS {
			return c.tls.send(f)
		}
		return c.notReady()
	}
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return fmt.Errorf("netloop send to %s: %w", c.remote, ErrConnClosed)
	}
	c.out.Lock()
	if err := c.queueLocked(f); err != nil {
		c.out.Unlock()
		return err
	}
	return c.startWriteLocked()
}

// queueLocked appends f's frame to the outbox (out locked). A frame that
// would take the buffered output past the hard cap is dropped and the
// connection closed (see closeSlowLocked).
func (c *Conn) queueLocked(f FrameAppender) error {
	if c.out.closing {
		return fmt.Errorf("netloop send to %s: %w", c.remote, ErrOutputFull)
	}
	before := len(c.out.buf)
	buf, err := f.AppendFrame(c.out.buf)
	if err != nil {
		return fmt.Errorf("netloop send to %s: %w", c.remote, err)
	}
	n := int64(len(buf) - before)
	if hard := c.srv.caps.hard; hard > 0 && c.OutputBuffered()+n > hard {
		c.out.buf = buf[:before]
		c.closeSlowLocked("hard cap", c.OutputBuffered()+n)
		return fmt.Errorf("netloop send to %s: %w", c.remote, ErrOutputFull)
	}
	c.out.buf = buf
	c.out.frames++
	c.addPending(n)
	return nil
}

// startWriteLocked writes the outbox unless a write is under way: directly
// when it may, else through the event loop. It is called with state read
// locked (the socket stays open) and out locked, and unlocks out.
func (c *Conn) startWriteLocked() error {
	if c.out.writing || c.out.scheduled || len(c.out.buf) == 0 {
		c.out.Unlock()
		return nil
	}
	if c.fd < 0 || c.out.viaLoop {
		return c.scheduleLocked()
	}
	c.out.writing = true
	c.out.Unlock()
	c.writeDirect()
	return nil
}

// scheduleLocked queues a flush task on the event loop (out locked; it
// unlocks it).
func (c *Conn) scheduleLocked() error {
	c.out.scheduled = true
	c.out.Unlock()
	if err := c.gc.EventLoop().Execute(context.Background(), c.flushTask); err != nil {
		c.out.Lock()
		c.out.scheduled = false
		c.out.Unlock()
		return fmt.Errorf("netloop send to %s: %w", c.remote, err)
	}
	return nil
}

// writeDirect writes the outbox to the socket until it is empty. The caller
// set writing and holds state's read lock. When the socket takes less than
// everything (it is full, or failing), the rest goes back to the front of
// the outbox and the event loop takes over: gnet buffers what the socket
// does not take, waits for it to drain, and closes the connection on an
// error.
func (c *Conn) writeDirect() {
	for {
		c.out.Lock()
		buf, frames := c.out.buf, c.out.frames
		if len(buf) == 0 {
			c.out.writing = false
			c.out.Unlock()
			return
		}
		c.out.buf, c.out.frames, c.out.spare = c.out.spare[:0], 0, nil
		c.out.Unlock()
		n := writeFD(c.fd, buf)
		c.srv.stats.framesOut.Add(frames)
		c.srv.stats.bytesOut.Add(int64(n))
		c.addPending(-int64(n))
		c.out.Lock()
		if n == len(buf) {
			c.keepSpareLocked(buf)
			c.out.Unlock()
			continue
		}
		rest := buf[:copy(buf, buf[n:])]
		c.out.buf = append(rest, c.out.buf...)
		c.out.viaLoop = true
		c.out.writing = false
		if err := c.scheduleLocked(); err != nil {
			c.srv.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting send: event loop refused the rest of a write")
		}
		return
	}
}

// keepSpareLocked keeps buf for reuse as the next outbox (out locked).
func (c *Conn) keepSpareLocked(buf []byte) {
	if c.out.spare == nil && cap(buf) <= maxSpare {
		c.out.spare = buf[:0]
	}
}

// flush writes every queued frame through gnet; it runs on the connection's
// event loop.
func (c *Conn) flush(context.Context) error {
	c.state.RLock()
	closed := c.state.closed
	c.state.RUnlock()
	c.out.Lock()
	c.out.scheduled = false
	if c.out.writing {
		c.out.Unlock()
		return nil // a direct write is under way and writes what is queued
	}
	for len(c.out.buf) > 0 {
		buf, frames := c.out.buf, c.out.frames
		c.out.buf, c.out.frames, c.out.spare = c.out.spare[:0], 0, nil
		c.out.writing = true
		c.out.Unlock()
		if !closed {
			// gnet writes what the socket takes and copies the rest into
			// its outbound buffer, so buf can be reused afterwards.
			if _, err := c.gc.Write(buf); err != nil {
				c.srv.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting send failed")
			} else {
				c.srv.stats.framesOut.Add(frames)
				c.srv.stats.bytesOut.Add(int64(len(buf)))
			}
		}
		c.out.Lock()
		c.out.writing = false
		if !closed {
			// What gnet kept first, then the outbox's share: the sum never
			// dips below what is buffered.
			c.setLoopBufferedLocked(int64(c.gc.OutboundBuffered()))
		}
		c.addPending(-int64(len(buf)))
		c.keepSpareLocked(buf)
	}
	// Direct writes resume once gnet holds nothing of this connection (a
	// flush with nothing queued also looks: see Server.Flush).
	c.out.viaLoop = !closed && c.gc.OutboundBuffered() > 0
	c.out.Unlock()
	return nil
}

// maxSpare is the largest flush buffer a connection keeps for reuse.
const maxSpare = 1 << 20

// Close closes the connection after the frames already queued. The
// handler's OnClose follows on the event loop. Closing a closed
// connection does nothing.
func (c *Conn) Close() error {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return nil
	}
	if err := c.gc.Close(); err != nil {
		return fmt.Errorf("netloop close %s: %w", c.remote, err)
	}
	return nil
}

// markClosed records that the connection is gone, waiting for in-flight
// Send and Close calls to finish queueing or writing. What is still queued
// is dropped and no longer counted as buffered output.
func (c *Conn) markClosed() {
	c.state.Lock()
	c.state.closed = true
	c.state.Unlock()
	c.out.Lock()
	dropped := int64(len(c.out.buf))
	c.out.buf, c.out.frames = nil, 0
	c.setLoopBufferedLocked(0)
	c.out.closing, c.out.gone = true, true
	c.out.Unlock()
	c.addPending(-dropped)
	if c.tls != nil {
		c.tls.dropOut()
	}
	c.srv.forgetSlow(c)
}

// notReady is the error of a send to a connection whose transport is not
// known yet, or a closed one.
func (c *Conn) notReady() error {
	c.state.RLock()
	closed := c.state.closed
	c.state.RUnlock()
	if closed {
		return fmt.Errorf("netloop send to %s: %w", c.remote, ErrConnClosed)
	}
	return fmt.Errorf("netloop send to %s: %w", c.remote, ErrConnNotReady)
}

// IsTLS reports whether the connection speaks TLS (false until its first
// bytes arrived).
func (c *Conn) IsTLS() bool { return transport(c.xport.Load()) == transportTLS }

// Outbox defers writes so that a stage answering a batch of requests
// writes each connection once: SendFrame queues a frame on its connection
// without writing it (unless a write is already under way, which takes it
// along), and Flush starts the write of every connection queued on. An
// Outbox belongs to one goroutine, and Flush must follow the sends (defer
// it). A nil *Outbox writes each frame at once, like Conn.SendFrame.
type Outbox struct {
	conns []*Conn
}

// Send queues cmd on c; see SendFrame.
func (o *Outbox) Send(c *Conn, cmd *remoting.Command) error { return o.SendFrame(c, commandFrame{cmd}) }

// SendFrame queues f's frame on c, to be written by Flush (or by a write
// already under way). After the connection is closed it returns an error
// wrapping ErrConnClosed.
func (o *Outbox) SendFrame(c *Conn, f FrameAppender) error {
	if o == nil {
		return c.SendFrame(f)
	}
	if x := transport(c.xport.Load()); x != transportPlain {
		if x != transportTLS {
			return c.notReady()
		}
		start, err := c.tls.queue(f, false)
		if start {
			o.conns = append(o.conns, c) // the write is ours: Flush starts it
		}
		return err
	}
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return fmt.Errorf("netloop send to %s: %w", c.remote, ErrConnClosed)
	}
	c.out.Lock()
	err := c.queueLocked(f)
	idle := !c.out.writing && !c.out.scheduled
	c.out.Unlock()
	if err == nil && idle && (len(o.conns) == 0 || o.conns[len(o.conns)-1] != c) {
		o.conns = append(o.conns, c)
	}
	return err
}

// Flush writes what was queued on every connection since the last Flush.
func (o *Outbox) Flush() {
	if o == nil {
		return
	}
	for i, c := range o.conns {
		c.kick()
		o.conns[i] = nil
	}
	o.conns = o.conns[:0]
}

// kick starts writing what is queued if nothing writes it.
func (c *Conn) kick() {
	if transport(c.xport.Load()) == transportTLS {
		c.tls.writeOut() // the queue handed the write to this Outbox
		return
	}
	c.kickWire()
}

// kickWire starts writing the outbox (the bytes on the wire) if nothing
// writes it.
func (c *Conn) kickWire() {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return
	}
	c.out.Lock()
	if err := c.startWriteLocked(); err != nil {
		c.srv.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting send: flush not scheduled")
	}
}

// tcpAddrPort converts a TCP address to a netip.AddrPort with IPv4-mapped
// addresses unmapped; other addresses give the zero value.
func tcpAddrPort(a net.Addr) netip.AddrPort {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
