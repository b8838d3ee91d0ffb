package netloop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

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
	gc.SetContext(c)
	s.addConn(c)
	s.stats.conns.Add(1)
	s.stats.accepted.Add(1)
	s.log.Debug().Uint64("conn", c.id).Str("remote", c.remote).Msg("remoting connection opened")
	s.h.OnOpen(c)
	return nil, gnet.None
}

// OnTraffic hands every complete frame in the inbound buffer to the
// handler and closes the connection on an invalid one.
func (e *events) OnTraffic(gc gnet.Conn) gnet.Action {
	s := e.s
	c, ok := gc.Context().(*Conn)
	if !ok {
		return gnet.Close
	}
	c.refreshOutput(gc.OutboundBuffered()) // handlers see how much the peer left unread
	before := gc.InboundBuffered()
	if s.hangup.Load() { // stopping, connections half-closed: drop what comes
		n, _ := gc.Discard(before)
		s.stats.bytesIn.Add(int64(n))
		return gnet.None
	}
	if r := s.refusal.Load(); r != nil { // stopping: answer, hand nothing on
		err := drainFrames(gc, s.cfg.MaxFrame, nil, func(cmd *remoting.Command) {
			s.stats.framesIn.Add(1)
			s.refuse(c, cmd, r)
		})
		s.stats.bytesIn.Add(int64(before - gc.InboundBuffered()))
		if err != nil {
			return e.reject(c, err)
		}
		return gnet.None
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
	err := drainFrames(gc, s.cfg.MaxFrame, raw, func(cmd *remoting.Command) {
		s.stats.framesIn.Add(1)
		s.h.OnCommand(c, cmd)
	})
	s.stats.bytesIn.Add(int64(before - gc.InboundBuffered()))
	if hot {
		fh.OnTrafficDone(c)
	}
	if err != nil {
		return e.reject(c, err)
	}
	return gnet.None
}

// inbound is the part of gnet.Conn that drainFrames reads.
type inbound interface {
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
	InboundBuffered() int
}

// drainFrames decodes and delivers every complete frame buffered in in,
// leaving a partial frame for the next call. Each frame is first offered
// to raw (when not nil) as it lies in the buffer; a frame raw does not
// take is decoded (the body copied) before its bytes are discarded,
// because gnet reuses them.
// An impossible length is rejected as soon as its 4 bytes arrive, so a
// hostile peer cannot make the buffer grow past maxFrame. It returns nil
// when it needs more bytes, or an error wrapping ErrBadFrame.
func drainFrames(in inbound, maxFrame int, raw func([]byte) bool, deliver func(*remoting.Command)) error {
	for {
		lenBuf, err := in.Peek(frameLengthSize)
		if err != nil {
			return nil // fewer than 4 bytes buffered
		}
		n := int64(int32(binary.BigEndian.Uint32(lenBuf)))
		if n < minFrameLength {
			return fmt.Errorf("%w: frame length %d below %d: %w: %w", ErrBadFrame, n, minFrameLength, errTooShort, remoting.ErrMalformed)
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
	e.s.stats.badFrames[badFrameReason(reason)].Add(1)
	c.badFrame = reason
	e.s.log.Warn().Uint64("conn", c.id).Str("remote", c.remote).Err(reason).Msg("remoting bad frame, closing connection")
	return gnet.Close
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
	s.stats.conns.Add(-1)
	if errors.Is(err, io.EOF) {
		err = nil // the peer closed the connection in an orderly way
	}
	if err == nil {
		err = c.badFrame
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
