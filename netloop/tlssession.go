package netloop

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

// tlsSession serves one TLS connection: its goroutine (run) does the
// handshake and reads, decrypts and delivers the requests; its outbox
// holds the plaintext frames sent to the connection until a sender
// encrypts them (see tls.go for the whole flow).
type tlsSession struct {
	c    *Conn
	srv  *Server
	wire *wireConn
	tc   *tls.Conn

	// ready is set once the handshake completed: sends are accepted.
	ready atomic.Bool
	// delivering is odd while the goroutine hands frames to the handler
	// (Refuse and Hangup wait for such a delivery to end; see
	// Server.eachSession).
	delivering atomic.Uint64

	// out holds the plaintext frames queued and not yet encrypted.
	// Invariant: when buf is not empty, writing is set or an Outbox holding
	// the connection will start the write.
	out struct {
		sync.Mutex
		buf, spare []byte
		frames     int64
		writing    bool // a goroutine encrypts and rechecks buf before it stops
		closing    bool // nothing more is queued
		// holding is set while the goroutine delivers a read's frames:
		// frames sent meanwhile with Conn.Send (the handler's answers on
		// the spot) are written after the delivery, together. An
		// Outbox's (a stage answering a batch) are not held.
		holding bool
	}

	// loopClosed is closed by OnClose on the event loop; loopErr, written
	// before, is its cause.
	loopClosed chan struct{}
	loopErr    error

	in plainBuf // decrypted bytes not yet delivered (goroutine only)
}

// startTLS makes c a TLS connection and starts its goroutine; on c's event
// loop, when its first byte opened a TLS handshake.
func (s *Server) startTLS(c *Conn, gcLocal, gcRemote net.Addr) *tlsSession {
	t := &tlsSession{c: c, srv: s, loopClosed: make(chan struct{})}
	t.wire = newWireConn(c, gcLocal, gcRemote)
	t.tc = tls.Server(t.wire, s.cfg.TLS.Config)
	c.tls = t
	c.xport.Store(uint32(transportTLS))
	s.stats.tlsConns.Add(1)
	s.stats.tlsOpen.Add(1)
	s.sessions.Lock()
	s.sessions.m[t] = struct{}{}
	s.sessions.Unlock()
	go t.run()
	return t
}

// closeWait bounds the wait of a goroutine that closed its connection for
// the event loop's OnClose (which always follows, also when the engine
// stops).
const closeWait = time.Minute

// run is the connection's goroutine: handshake, then read and deliver
// until the connection ends; it then tells the handler (OnClose) and is
// gone.
func (t *tlsSession) run() {
	s, c := t.srv, t.c
	var reason error
	if p := recovery.Catch(func() { reason = t.serve() }); p != nil {
		// The connection's failure alone: it is closed, the server serves on.
		recovery.Log(s.log.With().Uint64("conn", c.id).Str("remote", c.remote).Logger(), p, "remoting tls connection")
		reason = fmt.Errorf("remoting tls connection: %w", p)
	}
	if reason != nil {
		// The goroutine ends the connection: the event loop closes it.
		if err := c.Close(); err != nil {
			s.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting tls close not queued")
		}
	}
	select {
	case <-t.loopClosed:
	case <-time.After(closeWait):
		s.log.Warn().Uint64("conn", c.id).Str("remote", c.remote).Msg("remoting tls connection: the event loop did not report its close")
	}
	cause := t.loopErr
	if reason != nil && (cause == nil || errors.Is(reason, ErrBadFrame)) {
		cause = reason
	}
	s.stats.tlsOpen.Add(-1)
	s.log.Debug().Uint64("conn", c.id).Str("remote", c.remote).AnErr("cause", cause).Msg("remoting tls connection closed")
	s.h.OnClose(c, cause)
	s.sessions.Lock()
	delete(s.sessions.m, t)
	s.sessions.Unlock()
}

// serve runs the handshake within the handshake timeout, then delivers
// the decrypted frames until the input ends. It returns nil when the
// event loop closed the connection (the peer left, the server stops), or
// why the connection must be closed.
func (t *tlsSession) serve() error {
	s, c := t.srv, t.c
	_ = t.tc.SetReadDeadline(time.Now().Add(s.handshakeTimeout()))
	if err := t.tc.Handshake(); err != nil {
		s.stats.handshakeFailures.Add(1)
		s.sampled.Warn().Uint64("conn", c.id).Str("remote", c.remote).Err(err).Msg("remoting tls handshake failed, closing connection")
		return fmt.Errorf("tls handshake: %w", err)
	}
	_ = t.tc.SetReadDeadline(time.Time{})
	t.ready.Store(true)
	if ev := s.log.Debug(); ev.Enabled() {
		t.logHandshake(ev)
	}
	for {
		n, err := t.tc.Read(t.in.space(tlsReadSpace))
		if n > 0 {
			t.in.commit(n)
			if ferr := t.deliver(); ferr != nil {
				s.noteBadFrame(c, ferr)
				return ferr
			}
		}
		if err != nil {
			select {
			case <-t.loopClosed:
				return nil
			default:
			}
			if errors.Is(err, io.EOF) {
				return nil // the peer ended its side (with or without close_notify)
			}
			s.log.Debug().Uint64("conn", c.id).Str("remote", c.remote).Err(err).Msg("remoting tls read failed, closing connection")
			return fmt.Errorf("tls read: %w", err)
		}
	}
}

// tlsReadSpace is the room offered to each tls.Conn.Read: a whole record.
const tlsReadSpace = 16 << 10

// deliver hands the complete frames decrypted so far to the handler, then
// writes what was sent meanwhile in one batch (one tls.Conn.Write, one
// write to the socket).
func (t *tlsSession) deliver() error {
	t.delivering.Add(1)
	t.out.Lock()
	t.out.holding = true
	t.out.Unlock()
	// One TLS record at a time: the handler hears the end of a read once
	// no more input is waiting.
	err := t.srv.serveFrames(t.c, &t.in, t.wire.drained())
	t.out.Lock()
	t.out.holding = false
	start := !t.out.writing && len(t.out.buf) > 0
	if start {
		t.out.writing = true
	}
	t.out.Unlock()
	t.delivering.Add(1)
	if start {
		t.writeOut()
	}
	return err
}

// logHandshake logs a completed handshake.
func (t *tlsSession) logHandshake(ev *zerolog.Event) {
	st := t.tc.ConnectionState()
	ev = ev.Uint64("conn", t.c.id).Str("remote", t.c.remote).Str("version", tls.VersionName(st.Version)).
		Str("cipher", tls.CipherSuiteName(st.CipherSuite))
	if len(st.PeerCertificates) > 0 {
		ev = ev.Str("client_cert", st.PeerCertificates[0].Subject.String())
	}
	ev.Msg("remoting tls handshake done")
}

// loopClose is OnClose's part for a TLS connection, on its event loop:
// the input ends, and the goroutine tells the handler once it has
// delivered what it was delivering.
func (t *tlsSession) loopClose(err error) {
	t.loopErr = err
	close(t.loopClosed)
	t.wire.closeInput()
}

// send queues f's frame and encrypts and writes what is queued unless a
// write is under way (Conn.SendFrame of a TLS connection).
func (t *tlsSession) send(f FrameAppender) error {
	start, err := t.queue(f, true)
	if err == nil && start {
		t.writeOut()
	}
	return err
}

// queue appends f's frame to the plaintext outbox; start reports that the
// caller must start the write (no write was under way, nor a delivery
// that writes after it when hold is set; the write is now the caller's). A frame that would take the connection's buffered output
// past the hard cap is dropped and the connection closed.
func (t *tlsSession) queue(f FrameAppender, hold bool) (start bool, err error) {
	c := t.c
	if !t.ready.Load() {
		return false, fmt.Errorf("netloop send to %s: %w", c.remote, ErrConnNotReady)
	}
	t.out.Lock()
	if t.out.closing {
		t.out.Unlock()
		return false, fmt.Errorf("netloop send to %s: %w", c.remote, ErrConnClosed)
	}
	before := len(t.out.buf)
	buf, err := f.AppendFrame(t.out.buf)
	if err != nil {
		t.out.Unlock()
		return false, fmt.Errorf("netloop send to %s: %w", c.remote, err)
	}
	n := int64(len(buf) - before)
	if hard := c.srv.caps.hard; hard > 0 && c.OutputBuffered()+n > hard {
		t.out.buf = buf[:before]
		t.out.closing = true
		t.out.Unlock()
		c.closeSlow("hard cap", c.OutputBuffered()+n)
		return false, fmt.Errorf("netloop send to %s: %w", c.remote, ErrOutputFull)
	}
	t.out.buf = buf
	t.out.frames++
	c.addPending(n)
	start = !t.out.writing && !(hold && t.out.holding)
	if start {
		t.out.writing = true
	}
	t.out.Unlock()
	return start, nil
}

// writeOut encrypts the queued frames, one tls.Conn.Write per batch, and
// writes the records to the socket, until the outbox is empty. The caller
// set writing.
func (t *tlsSession) writeOut() {
	c := t.c
	for {
		t.out.Lock()
		buf, frames := t.out.buf, t.out.frames
		if len(buf) == 0 {
			t.out.writing = false
			t.out.Unlock()
			return
		}
		t.out.buf, t.out.frames, t.out.spare = t.out.spare[:0], 0, nil
		t.out.Unlock()
		t.wire.batching.Store(true)
		_, err := t.tc.Write(buf)
		t.wire.batching.Store(false)
		c.kickWire()
		if err == nil {
			c.srv.stats.framesOut.Add(frames)
		}
		c.addPending(-int64(len(buf)))
		t.out.Lock()
		if t.out.spare == nil && cap(buf) <= maxSpare {
			t.out.spare = buf[:0]
		}
		t.out.Unlock()
		if err != nil {
			// The connection is closing (or crypto/tls failed for good):
			// what is queued can no longer be written.
			c.srv.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting tls send failed")
			t.dropOut()
			_ = c.Close()
		}
	}
}

// dropOut drops the queued frames and takes no more (the connection is
// gone or going).
func (t *tlsSession) dropOut() {
	t.out.Lock()
	dropped := int64(len(t.out.buf))
	t.out.buf, t.out.frames, t.out.closing = nil, 0, true
	t.out.Unlock()
	t.c.addPending(-dropped)
}

// idle reports whether nothing is queued or being encrypted.
func (t *tlsSession) idle() bool {
	t.out.Lock()
	defer t.out.Unlock()
	return len(t.out.buf) == 0 && !t.out.writing
}

// plainBuf holds a TLS connection's decrypted bytes until they form
// frames; it is the inbound that drainFrames reads on the connection's
// goroutine.
type plainBuf struct {
	b []byte // b[r:] is unread
	r int
}

// maxKeptPlain is the largest decrypted-input buffer kept once empty.
const maxKeptPlain = 256 << 10

// Peek implements inbound.
func (p *plainBuf) Peek(n int) ([]byte, error) {
	if n > len(p.b)-p.r {
		return nil, io.ErrShortBuffer
	}
	return p.b[p.r : p.r+n], nil
}

// Discard implements inbound.
func (p *plainBuf) Discard(n int) (int, error) {
	n = min(n, len(p.b)-p.r)
	p.r += n
	return n, nil
}

// InboundBuffered implements inbound.
func (p *plainBuf) InboundBuffered() int { return len(p.b) - p.r }

// space returns at least n bytes of room after the unread bytes, which it
// first moves to the front.
func (p *plainBuf) space(n int) []byte {
	if p.r > 0 {
		p.b = p.b[:copy(p.b, p.b[p.r:])]
		p.r = 0
	}
	if len(p.b) == 0 && cap(p.b) > maxKeptPlain {
		p.b = nil
	}
	if cap(p.b)-len(p.b) < n {
		nb := make([]byte, len(p.b), max(2*cap(p.b), len(p.b)+n, 2*tlsReadSpace))
		copy(nb, p.b)
		p.b = nb
	}
	return p.b[len(p.b):cap(p.b)]
}

// commit adds n bytes written into the room space returned.
func (p *plainBuf) commit(n int) { p.b = p.b[:len(p.b)+n] }
