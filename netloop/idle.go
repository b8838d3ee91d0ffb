package netloop

// Silent connections: a connection that has sent no request byte within
// Config.IdleTimeout of connecting (a plaintext one: no byte at all; a TLS
// one: nothing decrypted, its handshake included in the bound) is closed
// by the sweep that gnet's ticker runs (slow.go's OnTick): such
// connections would otherwise hold a descriptor, a Conn and, for TLS, a
// goroutine for as long as the peer likes. Only connections that have not
// spoken are tracked; the first request byte takes a connection out of the
// set, so a busy port costs the sweep nothing.

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultIdleTimeout is how long a new connection may stay silent.
const DefaultIdleTimeout = 10 * time.Second

// silentSet holds the connections that have not sent a request byte yet.
type silentSet struct {
	sync.Mutex
	m map[*Conn]int64 // connected at (unix ns); guarded by the mutex
}

// idleTimeout resolves cfg.IdleTimeout (0: none).
func idleTimeout(cfg Config) time.Duration {
	switch {
	case cfg.IdleTimeout == 0:
		return DefaultIdleTimeout
	case cfg.IdleTimeout < 0:
		return 0
	}
	return cfg.IdleTimeout
}

// sweepTick is how often the sweep runs: often enough for the stall and
// idle bounds it enforces (0: no sweep).
func sweepTick(caps outputCaps, idle time.Duration) time.Duration {
	tick := caps.tick
	if idle > 0 {
		it := min(time.Second, max(idle/4, 10*time.Millisecond))
		if tick == 0 || it < tick {
			tick = it
		}
	}
	return tick
}

// rememberSilent tracks a new connection until it speaks.
func (s *Server) rememberSilent(c *Conn) {
	if s.idle <= 0 {
		return
	}
	s.silent.Lock()
	if s.silent.m == nil {
		s.silent.m = map[*Conn]int64{}
	}
	s.silent.m[c] = time.Now().UnixNano()
	s.silent.Unlock()
}

// forgetSilent stops tracking c (it spoke, or it closed).
func (s *Server) forgetSilent(c *Conn) {
	if s.idle <= 0 {
		return
	}
	s.silent.Lock()
	delete(s.silent.m, c)
	s.silent.Unlock()
}

// heardFrom notes that c sent request bytes (from its event loop, or its
// TLS goroutine): the first time, the sweep forgets it.
func (c *Conn) heardFrom() {
	if !c.heard.Load() && c.heard.CompareAndSwap(false, true) {
		c.srv.forgetSilent(c)
	}
}

// sweepSilent queues a close on the event loop of every connection silent
// for longer than the idle timeout.
func (s *Server) sweepSilent() {
	if s.idle <= 0 {
		return
	}
	cutoff := time.Now().Add(-s.idle).UnixNano()
	var conns []*Conn
	s.silent.Lock()
	for c, at := range s.silent.m {
		if at <= cutoff {
			delete(s.silent.m, c)
			conns = append(conns, c)
		}
	}
	s.silent.Unlock()
	for _, c := range conns {
		if err := c.gc.EventLoop().Execute(context.Background(), c.idleTask); err != nil {
			s.log.Debug().Err(err).Str("remote", c.remote).Msg("silent-connection close not queued")
		}
	}
}

// closeSilent closes c if it still has not spoken; it runs on the
// connection's event loop (queued by the sweep).
func (c *Conn) closeSilent(context.Context) error {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed || c.heard.Load() {
		return nil
	}
	s := c.srv
	s.stats.idleClosed.Add(1)
	s.sampled.Warn().Uint64("conn", c.id).Str("remote", c.remote).Dur("idle_timeout", s.idle).
		Msg("closing a connection that sent nothing since it connected")
	c.badFrame = fmt.Errorf("%w within %s of connecting", ErrIdle, s.idle)
	if err := c.gc.Close(); err != nil {
		s.log.Debug().Err(err).Str("remote", c.remote).Msg("close of a silent connection not queued")
	}
	return nil
}
