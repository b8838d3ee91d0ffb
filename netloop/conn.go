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

	ctx atomic.Pointer[ctxBox]

	// state guards closed. Send and Close hold the read lock while they
	// queue work on gnet, and OnClose takes the write lock to set closed, so
	// once OnClose has run no call can reach the (soon closed) event loop.
	state struct {
		sync.RWMutex
		closed bool
	}

	// badFrame is why the server closed the connection, if it did. Only
	// touched on the connection's event loop.
	badFrame error

	// out coalesces responses: Send appends encoded frames and schedules
	// one flush task on the event loop; frames queued before that task runs
	// leave in a single write.
	out struct {
		sync.Mutex
		buf       []byte // frames waiting for the flush
		spare     []byte // the other buffer, reused after each flush
		frames    int64  // frames in buf
		scheduled bool   // a flush task is queued
	}
	flushTask gnet.RunnableFunc
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

// Send encodes cmd and queues it for writing on the connection's event
// loop. It returns once queued; frames sent from one goroutine go out in
// order. Frames queued while an earlier flush is pending go out with it, in
// one write. After the connection is closed it returns an error wrapping
// ErrConnClosed.
func (c *Conn) Send(cmd *remoting.Command) error {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return fmt.Errorf("netloop send code %d opaque %d to %s: %w", cmd.Code, cmd.Opaque, c.remote, ErrConnClosed)
	}
	c.out.Lock()
	buf, err := remoting.AppendFrame(c.out.buf, cmd)
	if err != nil {
		c.out.Unlock()
		return fmt.Errorf("netloop send code %d opaque %d to %s: %w", cmd.Code, cmd.Opaque, c.remote, err)
	}
	c.out.buf = buf
	c.out.frames++
	schedule := !c.out.scheduled
	c.out.scheduled = true
	c.out.Unlock()
	if !schedule {
		return nil
	}
	if err := c.gc.EventLoop().Execute(context.Background(), c.flushTask); err != nil {
		c.out.Lock()
		c.out.scheduled = false
		c.out.Unlock()
		return fmt.Errorf("netloop send code %d opaque %d to %s: %w", cmd.Code, cmd.Opaque, c.remote, err)
	}
	return nil
}

// flush writes every queued frame; it runs on the connection's event loop.
func (c *Conn) flush(context.Context) error {
	c.out.Lock()
	buf, frames := c.out.buf, c.out.frames
	c.out.buf, c.out.frames, c.out.scheduled = c.out.spare[:0], 0, false
	c.out.spare = nil
	c.out.Unlock()
	c.state.RLock()
	closed := c.state.closed
	c.state.RUnlock()
	if !closed && len(buf) > 0 {
		// gnet writes what the socket takes and copies the rest into its
		// outbound buffer, so buf can be reused afterwards.
		if _, err := c.gc.Write(buf); err != nil {
			c.srv.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting send failed")
		} else {
			c.srv.stats.framesOut.Add(frames)
			c.srv.stats.bytesOut.Add(int64(len(buf)))
		}
	}
	c.out.Lock()
	if c.out.spare == nil && cap(buf) <= maxSpare {
		c.out.spare = buf[:0]
	}
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
// Send and Close calls to finish queueing.
func (c *Conn) markClosed() {
	c.state.Lock()
	c.state.closed = true
	c.state.Unlock()
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
