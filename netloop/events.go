package netloop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"

	"github.com/panjf2000/gnet/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// frameLengthSize is the size of the total-length field that starts every
// frame; the smallest valid length is the 4-byte header-length word.
const (
	frameLengthSize = 4
	minFrameLength  = 4
)

// events is the gnet.EventHandler of a Server. Its callbacks run on event
// loops and never block.
type events struct {
	gnet.BuiltinEventEngine
	s *Server
}

// OnBoot records the engine and the bound address, then lets Start return.
func (e *events) OnBoot(eng gnet.Engine) gnet.Action {
	s := e.s
	addr, err := listenerAddr(eng, s.cfg.Addr)
	if err != nil {
		s.bootErr = err
		close(s.booted)
		return gnet.Shutdown
	}
	s.mu.Lock()
	s.mu.eng = eng
	s.mu.addr = addr
	s.mu.Unlock()
	close(s.booted)
	return gnet.None
}

// OnOpen wraps the gnet connection in a Conn, capturing its addresses
// while it is safe to read them.
func (e *events) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	s := e.s
	if s.hangup.Load() {
		// Stopping (see Server.Hangup): closed before the handler sees
		// it; OnClose finds no Conn and tells nobody.
		s.log.Debug().Str("remote", addrString(gc.RemoteAddr())).Msg("remoting connection refused: the server is stopping")
		return nil, gnet.Close
	}
	c := &Conn{
		id:     s.nextID.Add(1),
		gc:     gc,
		srv:    s,
		remote: addrString(gc.RemoteAddr()),
		local:  localAddr(gc),
	}
	c.remoteAP = tcpAddrPort(gc.RemoteAddr())
	c.fd = connFD(gc)
	c.flushTask = c.flush
	c.checkTask = c.checkSlow
	c.idleTask = c.closeSilent
	if s.cfg.TLS.Mode == TLSDisabled {
		c.xport.Store(uint32(transportPlain)) // sends go out before the first byte arrives
	}
	gc.SetContext(c)
	s.addConn(c)
	s.rememberSilent(c)
	s.stats.conns.Add(1)
	s.stats.accepted.Add(1)
	s.log.Debug().Uint64("conn", c.id).Str("remote", c.remote).Msg("remoting connection opened")
	s.h.OnOpen(c)
	return nil, gnet.None
}

// OnTraffic hands every complete frame in the inbound buffer to the
// handler and closes the connection on an invalid one. The first bytes of
// a connection decide whether it speaks TLS; a TLS connection's bytes go to
// its goroutine (see tls.go).
func (e *events) OnTraffic(gc gnet.Conn) gnet.Action {
	s := e.s
	c, ok := gc.Context().(*Conn)
	if !ok {
		return gnet.Close
	}
	c.refreshOutput(gc.OutboundBuffered()) // handlers see how much the peer left unread
	if c.wire != transportPlain {
		if act, done := e.trafficNotPlain(c, gc); done {
			return act
		}
	}
	before := gc.InboundBuffered()
	err := s.serveFrames(c, gc, true)
	s.stats.bytesIn.Add(int64(before - gc.InboundBuffered()))
	if err != nil {
		return e.reject(c, err)
	}
	return gnet.None
}

// serveFrames delivers the complete frames buffered in in: to the handler
// (FrameHandler first, then its OnTrafficDone when done is set: the end
// of a read), or, once the server refuses requests or hangs up, as Refuse
// and Hangup say. It runs on the event loop for a plaintext connection and
// on its goroutine for a TLS one, and returns an error wrapping
// ErrBadFrame for an invalid frame.
func (s *Server) serveFrames(c *Conn, in inbound, done bool) error {
	if in.InboundBuffered() > 0 {
		c.heardFrom()
	}
	if s.hangup.Load() { // stopping, connections half-closed: drop what comes
		_, _ = in.Discard(in.InboundBuffered())
		return nil
	}
	if r := s.refusal.Load(); r != nil { // stopping: answer, hand nothing on
		return drainFrames(in, s.limits(c), nil, func(cmd *remoting.Command) {
			s.stats.framesIn.Add(1)
			s.refuse(c, cmd, r)
		})
	}
	var raw func([]byte) bool
	fh, hot := s.h.(FrameHandler)
	if hot {
		raw = func(frame []byte) bool {
			if fh.OnFrame(c, frame) {
				s.stats.framesIn.Add(1)
				return true
			}
			return false
		}
	}
	err := drainFrames(in, s.limits(c), raw, func(cmd *remoting.Command) {
		s.stats.framesIn.Add(1)
		s.h.OnCommand(c, cmd)
	})
	if hot && done {
		fh.OnTrafficDone(c)
	}
	return err
}

// trafficNotPlain serves a read of a connection not known to be
// plaintext: it sniffs the first byte of a new connection, refuses the
// transport the port does not take, and moves a TLS connection's bytes to
// its goroutine. done false means the connection is plaintext and its
// frames are to be served.
func (e *events) trafficNotPlain(c *Conn, gc gnet.Conn) (act gnet.Action, done bool) {
	s := e.s
	if c.wire == transportUnknown {
		if s.hangup.Load() {
			n, _ := gc.Discard(gc.InboundBuffered())
			s.stats.bytesIn.Add(int64(n))
			return gnet.None, true
		}
		first, err := gc.Peek(1)
		if err != nil || len(first) == 0 {
			return gnet.None, true
		}
		mode := s.cfg.TLS.Mode
		if first[0] != tlsRecordHandshake {
			if mode == TLSEnforcing {
				return e.refuseTransport(c, RefusedPlaintext), true
			}
			c.wire = transportPlain
			c.xport.Store(uint32(transportPlain))
			s.stats.plainConns.Add(1)
			return gnet.None, false
		}
		if mode == TLSDisabled {
			return e.refuseTransport(c, RefusedTLS), true
		}
		c.wire = transportTLS
		s.startTLS(c, gc.LocalAddr(), gc.RemoteAddr())
	}
	n := gc.InboundBuffered()
	b, err := gc.Peek(n)
	if err != nil {
		return gnet.None, true
	}
	took, woke := c.tls.wire.push(b, s.tlsCap)
	_, _ = gc.Discard(n)
	s.stats.bytesIn.Add(int64(n))
	if woke {
		// The connection's goroutine is runnable on this processor, which
		// the loop would otherwise keep while it waits in epoll (the
		// runtime takes it back only after some 20 µs): let it run now,
		// as the router yields to the stages it handed work to.
		runtime.Gosched()
	}
	if !took {
		s.stats.tlsOverruns.Add(1)
		c.badFrame = fmt.Errorf("%w: more than %d bytes", errTLSInputOverrun, s.tlsCap)
		s.log.Warn().Uint64("conn", c.id).Str("remote", c.remote).Int("cap", s.tlsCap).
			Msg("remoting tls input piled up faster than it was decrypted, closing connection")
		return gnet.Close, true
	}
	return gnet.None, true
}

// refuseTransport closes a connection that speaks the transport its port
// does not take (logged, sampled, and counted).
func (e *events) refuseTransport(c *Conn, r TransportRefusal) gnet.Action {
	s := e.s
	s.stats.refused[r].Add(1)
	why := "plaintext on a port that enforces TLS"
	if r == RefusedTLS {
		why = "TLS client hello on a port with TLS disabled"
	}
	c.badFrame = fmt.Errorf("%w: %s", ErrTransportRefused, why)
	s.sampled.Warn().Uint64("conn", c.id).Str("remote", c.remote).Str("tls_mode", s.cfg.TLS.Mode.String()).
		Str("reason", r.String()).Msg("remoting connection refused: " + why)
	return gnet.Close
}

// inbound is the part of gnet.Conn that drainFrames reads.
type inbound interface {
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
	InboundBuffered() int
}

// frameLimits is what drainFrames needs beyond the bytes: the frame limit,
// the connection's count of oversize bytes still to skip, and what
// answers an oversize request (oversize.go).
type frameLimits struct {
	maxFrame int
	skip     *int64
	over     func(cmd *remoting.Command, n int64) bool
}

// limits is the frameLimits of a connection.
func (s *Server) limits(c *Conn) frameLimits {
	return frameLimits{maxFrame: s.cfg.MaxFrame, skip: &c.skip,
		over: func(cmd *remoting.Command, n int64) bool { return s.answerOversize(c, cmd, n) }}
}

// drainFrames decodes and delivers every complete frame buffered in in,
// leaving a partial frame for the next call. Each frame is first offered
// to raw (when not nil) as it lies in the buffer; a frame raw does not
// take is decoded (the body copied) before its bytes are discarded,
// because gnet reuses them.
// An impossible length is rejected as soon as its 4 bytes arrive, so a
// hostile peer cannot make the buffer grow past maxFrame; when lim.over
// takes it (a send, answered), its bytes are skipped instead as they come.
// It returns nil when it needs more bytes, or an error wrapping ErrBadFrame.
func drainFrames(in inbound, lim frameLimits, raw func([]byte) bool, deliver func(*remoting.Command)) error {
	maxFrame := lim.maxFrame
	for {
		if lim.skip != nil && *lim.skip > 0 {
			d, _ := in.Discard(int(min(*lim.skip, int64(in.InboundBuffered()))))
			if *lim.skip -= int64(d); *lim.skip > 0 {
				return nil
			}
			continue
		}
		lenBuf, err := in.Peek(frameLengthSize)
		if err != nil {
			return nil // fewer than 4 bytes buffered
		}
		n := int64(int32(binary.BigEndian.Uint32(lenBuf)))
		if n < minFrameLength {
			return fmt.Errorf("%w: frame length %d below %d: %w: %w", ErrBadFrame, n, minFrameLength, errTooShort, remoting.ErrMalformed)
		}
		if n > int64(maxFrame) && lim.over != nil && lim.skip != nil {
			cmd, wait := oversizeHeader(in, n)
			if wait {
				return nil
			}
			if cmd != nil && lim.over(cmd, n) {
				*lim.skip = frameLengthSize + n
				continue
			}
		}
		if n > int64(maxFrame) {
			return fmt.Errorf("%w: frame length %d exceeds %d: %w", ErrBadFrame, n, maxFrame, remoting.ErrFrameTooLarge)
		}
		total := frameLengthSize + int(n)
		if in.InboundBuffered() < total {
			return nil // wait for the rest of the frame
		}
		frame, err := in.Peek(total)
		if err != nil {
			return nil
		}
		if raw != nil && raw(frame[frameLengthSize:]) {
			_, _ = in.Discard(total)
			continue
		}
		cmd, err := remoting.DecodeFrame(frame[frameLengthSize:])
		_, _ = in.Discard(total)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadFrame, err)
		}
		deliver(cmd)
	}
}

// reject logs why a connection's input is invalid and closes it.
func (e *events) reject(c *Conn, reason error) gnet.Action {
	e.s.noteBadFrame(c, reason)
	c.badFrame = reason
	return gnet.Close
}

// noteBadFrame counts and logs an invalid frame.
func (s *Server) noteBadFrame(c *Conn, reason error) {
	s.stats.badFrames[badFrameReason(reason)].Add(1)
	s.log.Warn().Uint64("conn", c.id).Str("remote", c.remote).Err(reason).Msg("remoting bad frame, closing connection")
}

// OnClose marks the Conn closed and tells the handler why.
func (e *events) OnClose(gc gnet.Conn, err error) gnet.Action {
	s := e.s
	c, ok := gc.Context().(*Conn)
	if !ok {
		return gnet.None
	}
	c.markClosed()
	s.removeConn(c)
	s.forgetSilent(c)
	s.stats.conns.Add(-1)
	if errors.Is(err, io.EOF) {
		err = nil // the peer closed the connection in an orderly way
	}
	if err == nil {
		err = c.badFrame
	}
	if c.wire == transportTLS {
		c.tls.loopClose(err) // its goroutine calls the handler's OnClose
		return gnet.None
	}
	s.log.Debug().Uint64("conn", c.id).Str("remote", c.remote).AnErr("cause", err).Msg("remoting connection closed")
	s.h.OnClose(c, err)
	return gnet.None
}

// addrString formats a connection address, tolerating nil.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
