package netloop

import (
	"context"
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// A clean stop runs in four steps (see docs/operations.md, "Stopping"):
//
//  1. Refuse: from now on every request is answered at once with a
//     refusal (the handler sees none), so nothing new reaches the stages;
//  2. the owner waits for the stages to answer what they hold, then calls
//     Flush, which waits until every answer left the process;
//  3. Hangup half-closes every connection and waits for the peers to
//     close theirs, reading and dropping what they still send: a socket
//     closed with unread input sends a reset, which makes the peer's
//     kernel drop the answers it has not read yet;
//  4. Stop closes what is left and the listener.

// refusal is the answer every request gets once Refuse was called.
type refusal struct {
	code   int32
	remark string
}

// Refuse makes the server answer every request that arrives from now on
// with code and remark (a oneway request is dropped), instead of handing
// it to the handler; responses (to requests the server sent) still reach
// the handler, and connections stay open. It returns once every event
// loop has finished the reads it began before the call, so that after it
// the handler gets no request: when it returns nil, every request the
// handler was given was given before. Calling it again changes the
// answer.
func (s *Server) Refuse(ctx context.Context, code int32, remark string) error {
	s.refusal.Store(&refusal{code: code, remark: remark})
	if err := s.eachLoop(ctx); err != nil {
		return fmt.Errorf("netloop %s refuse: %w", s.cfg.Name, err)
	}
	s.log.Info().Int32("code", code).Str("remark", remark).Msg("remoting server refusing every request")
	return nil
}

// hangupPoll is how often Hangup looks for connections still open.
const hangupPoll = 5 * time.Millisecond

// Hangup ends every connection gracefully: from now on what the peers
// send is read and dropped (not answered), a new connection is closed as
// soon as it is accepted, and each connection whose output is all written
// is half-closed (the peer reads end of file after the last answer). It waits until the peers have closed their side (a
// RocketMQ client closes the connection when it reads end of file) or ctx
// ends; Stop then closes what is left. Call it after Flush.
func (s *Server) Hangup(ctx context.Context) error {
	s.hangup.Store(true)
	if err := s.eachLoop(ctx); err != nil { // no loop still answers a request
		return fmt.Errorf("netloop %s hangup: %w", s.cfg.Name, err)
	}
	if err := s.Flush(ctx); err != nil { // refusals queued before hangup
		return fmt.Errorf("netloop %s hangup: %w", s.cfg.Name, err)
	}
	for _, c := range s.openConns() {
		_ = c.gc.EventLoop().Execute(ctx, gnet.RunnableFunc(func(context.Context) error {
			c.halfClose()
			return nil
		}))
	}
	tick := time.NewTicker(hangupPoll)
	defer tick.Stop()
	for {
		open := len(s.openConns())
		if open == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("netloop %s hangup: %d peers did not close: %w", s.cfg.Name, open, ctx.Err())
		case <-tick.C:
		}
	}
}

// halfClose sends FIN once nothing of c is left to write; on c's event
// loop. A TLS connection gets no close_notify alert first: its peer reads
// end of file at a record boundary, which crypto/tls takes as the end
// (RocketMQ's clients close a connection that ends either way).
func (c *Conn) halfClose() {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed || c.gc.OutboundBuffered() > 0 || (c.tls != nil && !c.tls.idle()) {
		return // Stop closes it
	}
	c.out.Lock()
	idle := len(c.out.buf) == 0 && !c.out.writing && !c.out.scheduled
	c.out.Unlock()
	if idle {
		if err := closeWrite(c.gc); err != nil {
			c.srv.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting half-close failed")
		}
	}
}

// eachLoop waits until every event loop that serves a connection has run a
// task queued now: a read it was in when eachLoop began has ended.
func (s *Server) eachLoop(ctx context.Context) error {
	loops := map[gnet.EventLoop]bool{}
	for _, c := range s.openConns() {
		if el := c.gc.EventLoop(); el != nil {
			loops[el] = true
		}
	}
	done := make(chan struct{}, len(loops))
	waiting := 0
	for el := range loops {
		if err := el.Execute(ctx, gnet.RunnableFunc(func(context.Context) error {
			done <- struct{}{}
			return nil
		})); err == nil {
			waiting++
		}
	}
	for ; waiting > 0; waiting-- {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("%d event loops did not finish their reads: %w", waiting, ctx.Err())
		}
	}
	return s.eachSession(ctx)
}

// eachSession waits until every TLS connection's goroutine that was
// handing frames to the handler when it began has finished that delivery
// (eachLoop's counterpart for TLS connections).
func (s *Server) eachSession(ctx context.Context) error {
	type busy struct {
		t   *tlsSession
		seq uint64
	}
	var wait []busy
	s.sessions.Lock()
	for t := range s.sessions.m {
		if seq := t.delivering.Load(); seq%2 == 1 {
			wait = append(wait, busy{t, seq})
		}
	}
	s.sessions.Unlock()
	if len(wait) == 0 {
		return nil
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		left := wait[:0]
		for _, b := range wait {
			if b.t.delivering.Load() == b.seq {
				left = append(left, b)
			}
		}
		if wait = left; len(wait) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d tls connections did not finish their deliveries: %w", len(wait), ctx.Err())
		case <-tick.C:
		}
	}
}

// refuse answers one request read after Refuse.
func (s *Server) refuse(c *Conn, cmd *remoting.Command, r *refusal) {
	switch {
	case cmd.IsResponse():
		s.h.OnCommand(c, cmd)
	case cmd.IsOneway():
	default:
		if err := c.Send(remoting.NewResponse(cmd, r.code, r.remark)); err != nil {
			s.log.Debug().Err(err).Str("remote", c.remote).Msg("remoting refusal not delivered")
		}
	}
}

// flushPoll is how often Flush looks at the connections.
const flushPoll = 2 * time.Millisecond

// Flush waits until every open connection has written everything queued on
// it (its outbox and what gnet buffered because the socket was full), or
// until ctx ends; a connection whose peer does not read keeps it waiting.
// Call it after Refuse, once the stages answered what they hold, so that
// Stop closes no connection with an answer still in the process.
func (s *Server) Flush(ctx context.Context) error {
	tick := time.NewTicker(flushPoll)
	defer tick.Stop()
	for {
		pending := 0
		for _, c := range s.openConns() {
			if !c.flushed() {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("netloop %s flush: %d connections still hold unsent answers: %w", s.cfg.Name, pending, ctx.Err())
		case <-tick.C:
		}
	}
}

// flushed reports whether everything queued on c was written to its
// socket (or c is closed). When only gnet's own buffer may still hold
// bytes, it has the event loop look (the loop's flush clears viaLoop once
// that buffer is empty) and reports false for now.
func (c *Conn) flushed() bool {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return true
	}
	if transport(c.xport.Load()) == transportTLS && !c.tls.idle() {
		return false // frames not yet encrypted
	}
	c.out.Lock()
	if len(c.out.buf) > 0 || c.out.writing || c.out.scheduled {
		c.out.Unlock()
		return false
	}
	if !c.out.viaLoop {
		c.out.Unlock()
		return true
	}
	if err := c.scheduleLocked(); err != nil {
		return true // the loop is gone: nothing more can be written
	}
	return false
}

// addConn records an open connection (on its event loop).
func (s *Server) addConn(c *Conn) {
	s.conns.Lock()
	s.conns.m[c.id] = c
	s.conns.Unlock()
}

// removeConn forgets a closed connection (on its event loop).
func (s *Server) removeConn(c *Conn) {
	s.conns.Lock()
	delete(s.conns.m, c.id)
	s.conns.Unlock()
}

// openConns returns the open connections.
func (s *Server) openConns() []*Conn {
	s.conns.Lock()
	defer s.conns.Unlock()
	out := make([]*Conn, 0, len(s.conns.m))
	for _, c := range s.conns.m {
		out = append(out, c)
	}
	return out
}
