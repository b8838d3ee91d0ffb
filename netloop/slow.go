package netloop

// Output caps: how a connection that does not read its answers is kept
// from growing the process's memory.
//
// A connection's buffered output is what was sent to it and not yet taken
// by the socket: the frames in its outbox (counted as they are queued and
// as they are written) plus what gnet holds for the socket, as the event
// loop last saw it (after each flush, before each read, and at each
// sweep). Above the soft cap (Config.MaxOutput) Conn.Congested is true and
// handlers refuse new work; a frame that would take it past the hard cap
// is dropped and the connection closed; a connection that stays above the
// soft cap for Config.StallTimeout is closed by the sweep, which gnet's
// ticker runs (its goroutine belongs to the engine and stops with it).

import (
	"context"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Defaults of the output caps.
const (
	// DefaultMaxOutput is the default soft cap on a connection's buffered
	// output: 32 MiB, eight pull answers of 4 MiB.
	DefaultMaxOutput = 32 << 20
	// DefaultStallTimeout is how long a connection may stay above the soft
	// cap before it is closed.
	DefaultStallTimeout = 30 * time.Second
)

// outputCaps are a server's resolved output caps; zero values mean none.
type outputCaps struct {
	soft, hard int64
	stall      time.Duration
	tick       time.Duration // how often the sweep looks at connections above the soft cap
}

// newOutputCaps resolves cfg's caps (cfg.MaxFrame already defaulted).
func newOutputCaps(cfg Config) outputCaps {
	if cfg.MaxOutput < 0 {
		return outputCaps{}
	}
	c := outputCaps{soft: cfg.MaxOutput, hard: cfg.MaxOutputHard, stall: cfg.StallTimeout}
	if c.soft == 0 {
		c.soft = DefaultMaxOutput
	}
	if c.hard <= 0 {
		c.hard = 4 * c.soft
	}
	c.hard = max(c.hard, c.soft+2*int64(cfg.MaxFrame))
	switch {
	case c.stall == 0:
		c.stall = DefaultStallTimeout
	case c.stall < 0:
		c.stall = 0
	}
	if c.stall > 0 {
		c.tick = min(time.Second, max(c.stall/4, 10*time.Millisecond))
	}
	return c
}

// slowSet holds the connections whose buffered output went above the soft
// cap, for the sweep.
type slowSet struct {
	sync.Mutex
	m map[*Conn]struct{} // guarded by the mutex
}

// OutputBuffered is the connection's buffered output in bytes: frames sent
// to it that the socket has not taken yet. gnet's share is what the event
// loop saw last, so between two looks it may be above the truth (the
// socket drained meanwhile), never below the outbox's share.
func (c *Conn) OutputBuffered() int64 { return c.pending.Load() + c.loopBuf.Load() }

// Congested reports whether the connection's buffered output is above the
// soft cap (Config.MaxOutput): its peer does not read its answers as fast
// as it asks for them. Handlers refuse new work while it is true.
func (c *Conn) Congested() bool {
	soft := c.srv.caps.soft
	return soft > 0 && c.OutputBuffered() > soft
}

// addPending counts d bytes more (or, negative, fewer) in the outbox.
func (c *Conn) addPending(d int64) {
	if d == 0 {
		return
	}
	c.pending.Add(d)
	c.srv.stats.outBuffered.Add(d)
	c.noteOutput()
}

// setLoopBufferedLocked records what gnet holds for the socket (out
// locked; after OnClose it does nothing).
func (c *Conn) setLoopBufferedLocked(v int64) {
	if c.out.gone {
		return
	}
	old := c.loopBuf.Swap(v)
	if old == v {
		return
	}
	c.srv.stats.outBuffered.Add(v - old)
	c.noteOutput()
}

// refreshOutput records what gnet holds for the socket; it runs on the
// connection's event loop (before each read).
func (c *Conn) refreshOutput(held int) {
	if held == 0 && c.loopBuf.Load() == 0 {
		return
	}
	c.out.Lock()
	c.setLoopBufferedLocked(int64(held))
	c.out.Unlock()
}

// noteOutput tracks when the buffered output went above the soft cap and
// hands such a connection to the sweep.
func (c *Conn) noteOutput() {
	soft := c.srv.caps.soft
	if soft <= 0 {
		return
	}
	over := c.OutputBuffered() > soft
	switch since := c.overSince.Load(); {
	case over && since == 0:
		if c.overSince.CompareAndSwap(0, time.Now().UnixNano()) {
			c.srv.rememberSlow(c)
		}
	case !over && since != 0:
		c.overSince.CompareAndSwap(since, 0) // the sweep forgets it
	}
}

// closeSlowLocked closes a connection that does not read its answers (out
// locked): nothing more is queued, the close is counted and logged once.
func (c *Conn) closeSlowLocked(reason string, buffered int64) {
	if c.out.closing {
		return
	}
	c.out.closing = true
	s := c.srv
	s.stats.slowClosed.Add(1)
	s.log.Warn().Uint64("conn", c.id).Str("remote", c.remote).Int64("bytes_buffered", buffered).
		Int64("max_output", s.caps.soft).Int64("max_output_hard", s.caps.hard).Dur("stall_timeout", s.caps.stall).
		Str("reason", reason).Msg("closing a connection that does not read its answers")
	if err := c.gc.Close(); err != nil {
		s.log.Debug().Err(err).Str("remote", c.remote).Msg("close of a slow connection not queued")
	}
}

// closeSlow is closeSlowLocked for a caller that holds no lock (a TLS
// connection's plaintext outbox).
func (c *Conn) closeSlow(reason string, buffered int64) {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		return
	}
	c.out.Lock()
	c.closeSlowLocked(reason, buffered)
	c.out.Unlock()
}

// checkSlow refreshes what gnet holds for the socket and closes the
// connection when its output has stayed above the soft cap for the stall
// timeout; it runs on the connection's event loop (queued by the sweep).
func (c *Conn) checkSlow(context.Context) error {
	c.state.RLock()
	defer c.state.RUnlock()
	if c.state.closed {
		c.srv.forgetSlow(c)
		return nil
	}
	c.out.Lock()
	defer c.out.Unlock()
	c.setLoopBufferedLocked(int64(c.gc.OutboundBuffered()))
	since := c.overSince.Load()
	if since != 0 && time.Since(time.Unix(0, since)) >= c.srv.caps.stall {
		c.closeSlowLocked("stalled", c.OutputBuffered())
	}
	return nil
}

// rememberSlow hands c to the sweep.
func (s *Server) rememberSlow(c *Conn) {
	s.slow.Lock()
	if s.slow.m == nil {
		s.slow.m = map[*Conn]struct{}{}
	}
	s.slow.m[c] = struct{}{}
	s.slow.Unlock()
}

// forgetSlow takes c from the sweep.
func (s *Server) forgetSlow(c *Conn) {
	s.slow.Lock()
	delete(s.slow.m, c)
	s.slow.Unlock()
}

// sweepSlow queues a check on the event loop of every connection above the
// soft cap and forgets those back under it. It runs on gnet's ticker.
func (s *Server) sweepSlow() {
	s.slow.Lock()
	var conns []*Conn
	for c := range s.slow.m {
		if c.overSince.Load() == 0 {
			delete(s.slow.m, c) // under the lock: noteOutput re-adds it if it crosses again
			continue
		}
		conns = append(conns, c)
	}
	s.slow.Unlock()
	for _, c := range conns {
		if err := c.gc.EventLoop().Execute(context.Background(), c.checkTask); err != nil {
			s.log.Debug().Err(err).Str("remote", c.remote).Msg("slow-connection check not queued")
		}
	}
}

// OnTick runs the slow-connection sweep and the silent-connection one
// (idle.go); gnet calls it only when the server enabled its ticker (a
// stall or idle timeout is set).
func (e *events) OnTick() (time.Duration, gnet.Action) {
	if e.s.caps.stall > 0 {
		e.s.sweepSlow()
	}
	e.s.sweepSilent()
	return e.s.tick, gnet.None
}
