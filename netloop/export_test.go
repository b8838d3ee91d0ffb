package netloop

// Test-only exports for package netloop_test: an in-memory gnet.Conn that
// lets benchmarks push frames through a Server's event handlers (OnOpen,
// OnTraffic, OnClose) and read what the server writes back, without TCP.

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// FakeConn is an in-memory gnet.Conn. The test goroutine that calls
// Traffic plays the event loop for reads; a goroutine of its own plays it
// for the tasks queued with EventLoop().Execute (the flushes). Methods not
// defined here panic (nil embedded interface).
type FakeConn struct {
	gnet.Conn
	srv    *Server
	in     []byte // inbound bytes not consumed yet (test goroutine only)
	base   []byte // in's buffer
	ctx    any
	remote net.Addr
	local  net.Addr
	fd     int
	loop   *fakeLoop
	// outbound is what OutboundBuffered reports (SetOutbound).
	outbound atomic.Int64
	// OnWrite receives every buffer the server writes through gnet; it runs
	// on the fake loop's goroutine.
	OnWrite func([]byte)
}

// NewFakeConn opens a fake connection on s (OnOpen runs at once). fd is
// what Fd returns: -1 for none (every write goes through the fake loop),
// else a non-blocking socket (one end of a socketpair) for direct writes.
// The loop's writes go to onWrite, or to fd when onWrite is nil.
func NewFakeConn(s *Server, fd int, onWrite func([]byte)) *FakeConn {
	f := &FakeConn{
		srv:     s,
		remote:  &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000},
		local:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10911},
		fd:      fd,
		loop:    newFakeLoop(),
		OnWrite: onWrite,
	}
	s.ev.OnOpen(f)
	return f
}

// Feed appends inbound bytes and runs OnTraffic, as an event loop does when
// the socket is readable. It returns OnTraffic's action.
func (f *FakeConn) Feed(b []byte) gnet.Action {
	if len(f.in) == 0 {
		f.in = f.base[:0] // reuse the buffer: what was read is gone
	}
	f.in = append(f.in, b...)
	f.base = f.in[:0]
	return f.srv.ev.OnTraffic(f)
}

// Shutdown runs OnClose and stops the fake loop.
func (f *FakeConn) Shutdown() {
	f.srv.ev.OnClose(f, nil)
	f.loop.stop()
}

// SetOutbound sets what OutboundBuffered reports: bytes gnet would still
// hold for the socket.
func (f *FakeConn) SetOutbound(n int) { f.outbound.Store(int64(n)) }

// NetConn returns the netloop connection wrapping f.
func (f *FakeConn) NetConn() *Conn { return f.ctx.(*Conn) }

func (f *FakeConn) Peek(n int) ([]byte, error) {
	if n > len(f.in) {
		return nil, io.ErrShortBuffer
	}
	return f.in[:n], nil
}

func (f *FakeConn) Discard(n int) (int, error) {
	n = min(n, len(f.in))
	f.in = f.in[n:]
	return n, nil
}

func (f *FakeConn) InboundBuffered() int      { return len(f.in) }
func (f *FakeConn) Context() any              { return f.ctx }
func (f *FakeConn) SetContext(v any)          { f.ctx = v }
func (f *FakeConn) RemoteAddr() net.Addr      { return f.remote }
func (f *FakeConn) LocalAddr() net.Addr       { return f.local }
func (f *FakeConn) EventLoop() gnet.EventLoop { return f.loop }
func (f *FakeConn) OutboundBuffered() int     { return int(f.outbound.Load()) }
func (f *FakeConn) Fd() int                   { return f.fd }
func (f *FakeConn) Close() error              { return nil }

// Write hands b to OnWrite when it is set; otherwise it writes all of it
// to the descriptor (waiting while it is full), as gnet would from its
// outbound buffer.
func (f *FakeConn) Write(b []byte) (int, error) {
	if f.OnWrite != nil {
		f.OnWrite(b)
		return len(b), nil
	}
	for n := 0; n < len(b); {
		k, err := syscall.Write(f.fd, b[n:])
		if k > 0 {
			n += k
		}
		switch {
		case err == syscall.EAGAIN:
			time.Sleep(50 * time.Microsecond)
		case err != nil && err != syscall.EINTR:
			return n, err
		}
	}
	return len(b), nil
}

// fakeLoop runs Execute'd tasks on one goroutine, in order.
type fakeLoop struct {
	gnet.EventLoop
	mu    sync.Mutex
	tasks []gnet.Runnable
	wake  chan struct{}
	done  chan struct{}
	quit  chan struct{}
}

func newFakeLoop() *fakeLoop {
	l := &fakeLoop{wake: make(chan struct{}, 1), done: make(chan struct{}), quit: make(chan struct{})}
	go l.run()
	return l
}

func (l *fakeLoop) Execute(ctx context.Context, r gnet.Runnable) error {
	select {
	case <-l.quit:
		return errors.New("fake loop stopped")
	default:
	}
	l.mu.Lock()
	l.tasks = append(l.tasks, r)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

func (l *fakeLoop) run() {
	defer close(l.done)
	var batch []gnet.Runnable
	for {
		select {
		case <-l.wake:
		case <-l.quit:
			return
		}
		l.mu.Lock()
		batch, l.tasks = l.tasks, batch[:0]
		l.mu.Unlock()
		for _, r := range batch {
			_ = r.Run(context.Background())
		}
	}
}

func (l *fakeLoop) stop() {
	close(l.quit)
	<-l.done
}
