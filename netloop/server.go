package netloop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// Handler receives decoded commands. Methods run on a gnet event loop (for
// a TLS connection: OnCommand and OnClose on the connection's goroutine)
// and must not block: copy or hand off the work (to actors) and answer later
// with Conn.Send. Calls for one connection are serialized; calls for
// different connections may run concurrently.
type Handler interface {
	// OnOpen is called once when a connection is accepted.
	OnOpen(c *Conn)
	// OnCommand is called for every decoded frame, in arrival order:
	// requests, and responses to requests the server sent. cmd is owned by
	// the handler.
	OnCommand(c *Conn, cmd *remoting.Command)
	// OnClose is called once when the connection is gone. err is nil for an
	// orderly close by either side, wraps ErrBadFrame when the server closed
	// the connection because of an invalid frame, and is the socket error
	// otherwise.
	OnClose(c *Conn, err error)
}

// FrameHandler is an optional extension of Handler for hot paths. A
// Handler that implements it is offered every frame before it is decoded:
// frame is everything after the 4-byte length field (what
// remoting.DecodeFrame takes), still in gnet's read buffer and valid only
// until OnFrame returns. OnFrame returns true when it served the frame
// (nothing more happens with it), false to have it decoded and passed to
// OnCommand as usual; it must not have acted on a frame it returns false
// for. It runs on the event loop, like OnCommand (for a TLS connection, on
// its goroutine).
type FrameHandler interface {
	OnFrame(c *Conn, frame []byte) bool
	// OnTrafficDone is called after the frames of one read were handled
	// (by OnFrame or OnCommand), still on the event loop: a hot path that
	// handed work to a stage may yield the processor to it here, once per
	// read rather than per frame.
	OnTrafficDone(c *Conn)
}

// Config configures a Server.
type Config struct {
	// Name identifies the server ("broker", "namesrv") in logs.
	Name string
	// Addr is the "host:port" to listen on; port 0 picks a free port (see
	// Server.Addr).
	Addr string
	// MaxFrame bounds a frame's total length L (the bytes after the length
	// field). Zero means remoting.DefaultMaxFrame. A send past it is
	// answered MESSAGE_ILLEGAL and skipped (oversize.go); any other frame
	// past it closes the connection.
	MaxFrame int
	// MessageLimit, when set, returns the largest message body the broker
	// takes, named in the answer to an oversize send (nil: MaxFrame).
	MessageLimit func() int
	// NumEventLoop is the number of gnet event loops. Zero means one per CPU.
	NumEventLoop int
	// MaxOutput is the soft cap on a connection's buffered output: the
	// bytes of frames sent to it that the socket has not taken yet (queued
	// in its outbox or in gnet's buffer). Above it Conn.Congested reports
	// true, for handlers to refuse new work (the broker answers
	// SYSTEM_BUSY). Zero means DefaultMaxOutput; negative means no caps.
	MaxOutput int64
	// MaxOutputHard is the hard cap: a frame that would take a
	// connection's buffered output past it is dropped and the connection
	// closed. Zero means 4 × MaxOutput; it is raised to at least MaxOutput
	// plus two frames of MaxFrame.
	MaxOutputHard int64
	// StallTimeout closes a connection whose buffered output has stayed
	// above MaxOutput this long (a client that does not read). Zero means
	// DefaultStallTimeout; negative means never.
	StallTimeout time.Duration
	// IdleTimeout closes a connection that has sent no request byte this
	// long after connecting (TLS: nothing decrypted; see idle.go). Zero
	// means DefaultIdleTimeout; negative means never.
	IdleTimeout time.Duration
	// Logger receives server and gnet logs. The zero value logs nothing.
	Logger zerolog.Logger
	// TLS configures TLS on the port (see tls.go); the zero value serves
	// plaintext only.
	TLS TLS
}

// ServerStats are the server's counters since Start.
type ServerStats struct {
	// Conns is the number of open connections.
	Conns int64
	// Accepted counts connections accepted.
	Accepted int64
	// FramesIn counts frames decoded and handed to the Handler.
	FramesIn int64
	// FramesOut counts frames written (or buffered for writing) by Send.
	FramesOut int64
	// BytesIn counts bytes consumed from the sockets: every complete
	// frame, one whose header does not decode included (the bytes after an
	// impossible length field are never read as a frame and not counted);
	// for a TLS connection, every encrypted byte read.
	BytesIn int64
	// BytesOut counts bytes of frames written (or buffered for writing);
	// for a TLS connection, the encrypted records.
	BytesOut int64
	// BadFrames counts connections closed because of an invalid frame.
	BadFrames int64
	// BadFramesBy splits BadFrames by reason.
	BadFramesBy [NumBadFrameReasons]int64
	// Oversize counts sends longer than MaxFrame answered MESSAGE_ILLEGAL
	// and skipped (the connection kept).
	Oversize int64
	// OutputBuffered is the buffered output of every open connection, in
	// bytes (see Config.MaxOutput).
	OutputBuffered int64
	// SlowClosed counts connections closed because they did not read their
	// answers: buffered output past the hard cap, or above the soft cap for
	// longer than Config.StallTimeout.
	SlowClosed int64
	// IdleClosed counts connections closed because they sent nothing
	// within Config.IdleTimeout of connecting.
	IdleClosed int64

	// Plaintext and TLS count connections by the transport their first
	// bytes chose (a connection closed before it sent a byte is in
	// neither; on a port without TLS only the ones that sent a byte).
	Plaintext, TLS int64
	// TLSOpen is the number of open TLS connections (their goroutines).
	TLSOpen int64
	// HandshakeFailures counts TLS handshakes that failed or timed out.
	HandshakeFailures int64
	// TLSInputOverruns counts TLS connections closed because their input
	// piled up undecrypted (see tlsInputCap).
	TLSInputOverruns int64
	// RefusedBy counts connections closed because they spoke the
	// transport their port does not take, by refusal.
	RefusedBy [NumTransportRefusals]int64
}

// serverState is a Server's life-cycle stage.
type serverState int

const (
	stateNew serverState = iota
	stateStarting
	stateRunning
	stateStopping
	stateStopped
)

// Server is a gnet TCP server of RemotingCommand frames. Create it with
// NewServer, then Start and eventually Stop it; a stopped server cannot be
// restarted.
type Server struct {
	cfg Config
	h   Handler
	log zerolog.Logger
	ev  *events

	mu struct {
		sync.Mutex
		state serverState
		eng   gnet.Engine
		addr  string
	}

	booted  chan struct{} // closed by OnBoot
	bootErr error         // written before booted is closed
	done    chan struct{} // closed when gnet.Run has returned
	runErr  error         // written before done is closed

	// refusal, once set by Refuse, answers every request (see stop.go).
	refusal atomic.Pointer[refusal]
	// hangup, once set by Hangup, drops everything read.
	hangup atomic.Bool
	// conns are the open connections (Refuse and Flush go through them).
	// The lock is held only to read or change the map.
	conns struct {
		sync.Mutex
		m map[uint64]*Conn
	}

	nextID atomic.Uint64
	stats  struct {
		conns, accepted, framesIn, framesOut, bytesIn, bytesOut atomic.Int64
		outBuffered, slowClosed, idleClosed                     atomic.Int64
		badFrames                                               [NumBadFrameReasons]atomic.Int64
		oversize                                                atomic.Int64

		plainConns, tlsConns, tlsOpen, handshakeFailures, tlsOverruns atomic.Int64
		refused                                                       [NumTransportRefusals]atomic.Int64
	}
	caps outputCaps
	slow slowSet
	// idle is the resolved Config.IdleTimeout (0: none); silent the
	// connections that have not spoken yet (idle.go).
	idle   time.Duration
	silent silentSet
	// tick is the sweep's period (0: no ticker).
	tick time.Duration

	// sessions are the TLS connections whose goroutine runs (Refuse,
	// Hangup and Stop wait for them).
	sessions struct {
		sync.Mutex
		m map[*tlsSession]struct{}
	}
	// tlsCap bounds a TLS connection's undecrypted input (tlsInputCap).
	tlsCap int
	// sampled logs what a client can make happen at will (refused
	// transports, failed handshakes) at most a burst a second.
	sampled zerolog.Logger
}

// NewServer returns a server for cfg that hands commands to h. It does not
// listen until Start.
func NewServer(cfg Config, h Handler) *Server {
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = remoting.DefaultMaxFrame
	}
	s := &Server{
		cfg:    cfg,
		h:      h,
		log:    cfg.Logger.With().Str("server", cfg.Name).Logger(),
		booted: make(chan struct{}),
		done:   make(chan struct{}),
		caps:   newOutputCaps(cfg),
		idle:   idleTimeout(cfg),
	}
	s.tick = sweepTick(s.caps, s.idle)
	s.ev = &events{s: s}
	s.conns.m = map[uint64]*Conn{}
	s.sessions.m = map[*tlsSession]struct{}{}
	s.tlsCap = tlsInputCap(cfg.MaxFrame)
	s.sampled = s.log.Sample(&zerolog.BurstSampler{Burst: 20, Period: time.Second})
	return s
}

// handshakeTimeout is the configured TLS handshake timeout.
func (s *Server) handshakeTimeout() time.Duration {
	if d := s.cfg.TLS.HandshakeTimeout; d > 0 {
		return d
	}
	return DefaultHandshakeTimeout
}

// Start binds the listener and starts the event loops. It returns once the
// server is listening, or with the error that prevented it.
func (s *Server) Start() error {
	s.mu.Lock()
	if s.mu.state != stateNew {
		s.mu.Unlock()
		return fmt.Errorf("netloop %s start: %w", s.cfg.Name, ErrServerState)
	}
	if err := validateTLS(s.cfg.TLS); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("netloop %s start: %w", s.cfg.Name, err)
	}
	s.mu.state = stateStarting
	s.mu.Unlock()

	opts := []gnet.Option{
		gnet.WithLogger(gnetLogger{log: s.log.With().Str("component", "gnet").Logger()}),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithReuseAddr(true),
	}
	if s.tick > 0 {
		opts = append(opts, gnet.WithTicker(true)) // OnTick: the slow- and silent-connection sweeps
	}
	if s.cfg.NumEventLoop > 0 {
		opts = append(opts, gnet.WithNumEventLoop(s.cfg.NumEventLoop))
	} else {
		opts = append(opts, gnet.WithMulticore(true))
	}
	go s.run(opts)

	select {
	case <-s.booted:
		if s.bootErr != nil {
			<-s.done
			s.setState(stateStopped)
			return fmt.Errorf("netloop %s listen %s: %w", s.cfg.Name, s.cfg.Addr, s.bootErr)
		}
	case <-s.done:
		s.setState(stateStopped)
		return fmt.Errorf("netloop %s listen %s: %w", s.cfg.Name, s.cfg.Addr, s.runErr)
	}
	s.mu.Lock()
	if s.mu.state == stateStarting { // a concurrent Stop may have begun
		s.mu.state = stateRunning
	}
	addr := s.mu.addr
	s.mu.Unlock()
	s.log.Info().Str("addr", addr).Int("maxFrame", s.cfg.MaxFrame).Int64("max_output", s.caps.soft).
		Int64("max_output_hard", s.caps.hard).Dur("stall_timeout", s.caps.stall).Str("tls_mode", s.cfg.TLS.Mode.String()).
		Msg("remoting server listening")
	return nil
}

// run runs the gnet engine until it stops.
func (s *Server) run(opts []gnet.Option) {
	var err error
	if p := recovery.Catch(func() { err = gnet.Run(s.ev, "tcp://"+s.cfg.Addr, opts...) }); p != nil {
		// The engine's own goroutine: the port stops serving (Stop and
		// Start see it), the process goes on.
		recovery.Log(s.log, p, "remoting server engine")
		err = fmt.Errorf("remoting server engine: %w", p)
	}
	if err != nil {
		s.log.Error().Err(err).Msg("remoting server engine stopped with error")
	}
	s.runErr = err
	close(s.done)
}

// setState sets the life-cycle state.
func (s *Server) setState(st serverState) {
	s.mu.Lock()
	s.mu.state = st
	s.mu.Unlock()
}

// Addr returns the bound "ip:port", with the real port when Config.Addr
// asked for port 0. It is "" before Start succeeds.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.addr
}

// Stop closes the listener and every connection (each gets OnClose) and
// waits for the event loops to exit, or for ctx to end. A clean stop calls
// Refuse, Flush and Hangup first (see stop.go): Stop itself drops what is
// still queued on a connection. Stop on a server that never started, or a
// second Stop, returns nil.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	switch s.mu.state {
	case stateNew, stateStopped:
		s.mu.state = stateStopped
		s.mu.Unlock()
		return nil
	case stateStarting:
		s.mu.Unlock()
		return fmt.Errorf("netloop %s stop while starting: %w", s.cfg.Name, ErrServerState)
	case stateRunning:
		s.mu.state = stateStopping
		eng := s.mu.eng
		s.mu.Unlock()
		// Engine.Stop polls for completion every 500ms; we watch done
		// instead and cancel its wait as soon as the engine has exited.
		stopCtx, cancel := context.WithCancel(context.Background())
		defer cancel()
		recovery.Go(nil, func(p *recovery.Panic) { recovery.Log(s.log, p, "remoting server engine stop") },
			func() { _ = eng.Stop(stopCtx) })
	default: // stopping: wait with the first caller
		s.mu.Unlock()
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("netloop %s stop: %w", s.cfg.Name, ctx.Err())
	}
	if err := s.waitSessions(ctx); err != nil {
		return fmt.Errorf("netloop %s stop: %w", s.cfg.Name, err)
	}
	s.setState(stateStopped)
	s.log.Info().Msg("remoting server stopped")
	return nil
}

// waitSessions waits until the goroutine of every TLS connection ended
// (the engine closed their connections), or ctx ends.
func (s *Server) waitSessions(ctx context.Context) error {
	tick := time.NewTicker(flushPoll)
	defer tick.Stop()
	for {
		s.sessions.Lock()
		n := len(s.sessions.m)
		s.sessions.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d tls connection goroutines still running: %w", n, ctx.Err())
		case <-tick.C:
		}
	}
}

// Name is the server's name (Config.Name).
func (s *Server) Name() string { return s.cfg.Name }

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() ServerStats {
	st := ServerStats{
		Conns:     s.stats.conns.Load(),
		Accepted:  s.stats.accepted.Load(),
		FramesIn:  s.stats.framesIn.Load(),
		FramesOut: s.stats.framesOut.Load(),
		BytesIn:   s.stats.bytesIn.Load(),
		BytesOut:  s.stats.bytesOut.Load(),

		OutputBuffered: s.stats.outBuffered.Load(),
		SlowClosed:     s.stats.slowClosed.Load(),
		IdleClosed:     s.stats.idleClosed.Load(),

		Plaintext:         s.stats.plainConns.Load(),
		TLS:               s.stats.tlsConns.Load(),
		TLSOpen:           s.stats.tlsOpen.Load(),
		HandshakeFailures: s.stats.handshakeFailures.Load(),
		TLSInputOverruns:  s.stats.tlsOverruns.Load(),
	}
	for i := range st.BadFramesBy {
		st.BadFramesBy[i] = s.stats.badFrames[i].Load()
		st.BadFrames += st.BadFramesBy[i]
	}
	st.Oversize = s.stats.oversize.Load()
	for i := range st.RefusedBy {
		st.RefusedBy[i] = s.stats.refused[i].Load()
	}
	return st
}
