package netloop

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// wireConn is the net.Conn that crypto/tls runs over for one TLS
// connection: the encrypted side. Read is fed by the event loop (push) and
// waits, on the connection's goroutine, for bytes, the end of the input or
// the read deadline; Write queues encrypted bytes on the connection's
// outbox, which writes them to the socket from the calling goroutine when
// it takes them, else through the event loop (Conn.writeWire). Neither
// ever blocks the event loop, and Write never waits for the socket.
type wireConn struct {
	c *Conn

	// in holds the encrypted bytes read from the socket and not yet read
	// by crypto/tls (buf[off:]). eof is set once the event loop closed the
	// connection: Read returns io.EOF after what is left.
	in struct {
		sync.Mutex
		buf []byte
		off int
		eof bool
	}
	// ready wakes a Read waiting for input (capacity 1).
	ready chan struct{}
	// readDeadline is the read deadline (unix ns; 0: none).
	readDeadline atomic.Int64
	// batching is set while the connection's writer encrypts a batch of
	// frames: the records are queued and written together after it.
	batching atomic.Bool

	local, remote net.Addr
}

var _ net.Conn = (*wireConn)(nil)

// maxKeptInput is the largest input buffer a wireConn keeps once it is
// empty; a larger one (a burst of big frames) is dropped.
const maxKeptInput = 256 << 10

func newWireConn(c *Conn, local, remote net.Addr) *wireConn {
	return &wireConn{c: c, ready: make(chan struct{}, 1), local: local, remote: remote}
}

// push appends bytes read from the socket; on the connection's event loop.
// It reports false when the undecrypted input would pass limit (the bytes
// are not taken); after closeInput it drops them.
func (w *wireConn) push(b []byte, limit int) bool {
	w.in.Lock()
	if w.in.eof {
		w.in.Unlock()
		return true
	}
	unread := len(w.in.buf) - w.in.off
	if unread+len(b) > limit {
		w.in.Unlock()
		return false
	}
	if w.in.off > 0 && len(w.in.buf)+len(b) > cap(w.in.buf) {
		w.in.buf = w.in.buf[:copy(w.in.buf, w.in.buf[w.in.off:])]
		w.in.off = 0
	}
	w.in.buf = append(w.in.buf, b...)
	w.in.Unlock()
	w.wake()
	return true
}

// closeInput ends the input: Read returns io.EOF once what is buffered
// was read. On the event loop, from OnClose.
func (w *wireConn) closeInput() {
	w.in.Lock()
	w.in.eof = true
	w.in.Unlock()
	w.wake()
}

func (w *wireConn) wake() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// Read implements net.Conn: it returns buffered input, or waits for some.
func (w *wireConn) Read(p []byte) (int, error) {
	for {
		w.in.Lock()
		if w.in.off < len(w.in.buf) {
			n := copy(p, w.in.buf[w.in.off:])
			w.in.off += n
			if w.in.off == len(w.in.buf) {
				w.in.off = 0
				w.in.buf = w.in.buf[:0]
				if cap(w.in.buf) > maxKeptInput {
					w.in.buf = nil
				}
			}
			w.in.Unlock()
			return n, nil
		}
		eof := w.in.eof
		w.in.Unlock()
		if eof {
			return 0, io.EOF
		}
		if err := w.wait(); err != nil {
			return 0, err
		}
	}
}

// wait waits for input (or its end) until the read deadline.
func (w *wireConn) wait() error {
	dl := w.readDeadline.Load()
	if dl == 0 {
		<-w.ready
		return nil
	}
	d := time.Until(time.Unix(0, dl))
	if d <= 0 {
		return fmt.Errorf("netloop tls read from %s: %w", w.c.remote, os.ErrDeadlineExceeded)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ready:
		return nil
	case <-t.C:
		return fmt.Errorf("netloop tls read from %s: %w", w.c.remote, os.ErrDeadlineExceeded)
	}
}

// Write implements net.Conn: it queues the encrypted bytes on the
// connection's outbox and, unless a batch is being encrypted, writes them.
func (w *wireConn) Write(b []byte) (int, error) { return w.c.writeWire(b, !w.batching.Load()) }

// Close implements net.Conn: it closes the connection (crypto/tls calls it
// only when a handshake is interrupted; the connection's goroutine closes
// the connection itself).
func (w *wireConn) Close() error { return w.c.Close() }

// LocalAddr implements net.Conn.
func (w *wireConn) LocalAddr() net.Addr { return w.local }

// RemoteAddr implements net.Conn.
func (w *wireConn) RemoteAddr() net.Addr { return w.remote }

// SetDeadline implements net.Conn; writes never wait, so only the read
// deadline matters.
func (w *wireConn) SetDeadline(t time.Time) error { return w.SetReadDeadline(t) }

// SetReadDeadline implements net.Conn. A Read already waiting keeps the
// deadline it started with.
func (w *wireConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() {
		w.readDeadline.Store(0)
	} else {
		w.readDeadline.Store(t.UnixNano())
	}
	return nil
}

// SetWriteDeadline implements net.Conn; writes never wait.
func (w *wireConn) SetWriteDeadline(time.Time) error { return nil }

// writeWire queues encrypted bytes of a TLS connection on its outbox and,
// when kick is set, writes them (see startWriteLocked); without kick the
// caller writes them later (kickWire). It takes the state lock itself: it
// runs inside tls.Conn.Write or the handshake, never under SendFrame's.
func (c *Conn) writeWire(b []byte, kick bool) (int, error) {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return 0, fmt.Errorf("netloop send to %s: %w", c.remote, ErrConnClosed)
	}
	c.out.Lock()
	if c.out.closing {
		c.out.Unlock()
		return 0, fmt.Errorf("netloop send to %s: %w", c.remote, ErrOutputFull)
	}
	c.out.buf = append(c.out.buf, b...)
	c.addPending(int64(len(b)))
	if !kick {
		c.out.Unlock()
		return len(b), nil
	}
	if err := c.startWriteLocked(); err != nil {
		return 0, err
	}
	return len(b), nil
}
