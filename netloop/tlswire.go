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

	// in holds the encrypted bytes read from the socket that the reader
	// has not taken yet (fill). The reader takes fill whole and leaves its
	// previous buffer for the next bytes: the two buffers are swapped, not
	// copied or grown, in steady state. eof is set once the event loop
	// closed the connection: Read returns io.EOF after what is left.
	in struct {
		sync.Mutex
		fill []byte
		eof  bool
	}
	// rbuf[roff:] is what the reader took and crypto/tls has not read yet
	// (the connection's goroutine only).
	rbuf []byte
	roff int
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

// maxKeptInput is the largest input buffer a wireConn keeps for reuse; a
// larger one (a burst of big frames) is dropped once read.
const maxKeptInput = 4 << 20

func newWireConn(c *Conn, local, remote net.Addr) *wireConn {
	return &wireConn{c: c, ready: make(chan struct{}, 1), local: local, remote: remote}
}

// push appends bytes read from the socket; on the connection's event loop.
// took is false when the bytes not yet taken by the reader would pass
// limit (the bytes are not taken); after closeInput it drops them. woke
// reports that it left a wake-up for the reader.
func (w *wireConn) push(b []byte, limit int) (took, woke bool) {
	w.in.Lock()
	if w.in.eof {
		w.in.Unlock()
		return true, false
	}
	if len(w.in.fill)+len(b) > limit {
		w.in.Unlock()
		return false, false
	}
	w.in.fill = append(w.in.fill, b...)
	w.in.Unlock()
	return true, w.wake()
}

// closeInput ends the input: Read returns io.EOF once what is buffered
// was read. On the event loop, from OnClose.
func (w *wireConn) closeInput() {
	w.in.Lock()
	w.in.eof = true
	w.in.Unlock()
	w.wake()
}

// wake wakes a waiting Read; it reports whether it left a wake-up (false:
// one was already pending).
func (w *wireConn) wake() bool {
	select {
	case w.ready <- struct{}{}:
		return true
	default:
		return false
	}
}

// Read implements net.Conn: it returns input taken before, or takes what
// was pushed since, or waits for some.
func (w *wireConn) Read(p []byte) (int, error) {
	for {
		if w.roff < len(w.rbuf) {
			n := copy(p, w.rbuf[w.roff:])
			w.roff += n
			return n, nil
		}
		w.in.Lock()
		if len(w.in.fill) > 0 {
			old := w.rbuf[:0]
			if cap(old) > maxKeptInput {
				old = nil
			}
			w.rbuf, w.roff = w.in.fill, 0
			w.in.fill = old
			w.in.Unlock()
			continue
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

// drained reports whether every byte pushed so far was handed to
// crypto/tls (on the connection's goroutine).
func (w *wireConn) drained() bool {
	if w.roff < len(w.rbuf) {
		return false
	}
	w.in.Lock()
	defer w.in.Unlock()
	return len(w.in.fill) == 0
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
