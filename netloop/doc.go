// Package netloop is wheelmq's network front end: a gnet v2 TCP server that
// speaks RocketMQ's remoting protocol (see package remoting and
// docs/protocol.md) for the broker and the name server.
//
// # Data flow
//
// gnet event loops read the socket. OnTraffic drains every complete frame
// in the inbound buffer, checks its length against Config.MaxFrame, decodes
// it into an owned *remoting.Command (the body is copied before the bytes
// are discarded, because gnet reuses its buffers) and calls
// Handler.OnCommand. A frame that cannot be valid (length out of range,
// header length past the frame, unknown serialize type, unparsable header)
// is logged with the remote address and closes that connection only.
//
// A Handler that also implements FrameHandler is offered each frame as it
// lies in the read buffer first, so that a hot path can serve it without
// decoding it into a Command (see netloop/router's plain sends).
//
// Handlers run on an event loop and must not block: they copy what they
// need, hand the work to actors, and answer later with Conn.Send (or
// SendFrame), which appends the encoded frame to the connection's outbox
// and writes it: straight to the socket from the calling goroutine when no
// other write is under way and gnet holds no unsent bytes of the connection
// (the socket is non-blocking; what it does not take, and everything after
// it until gnet's buffer is empty, goes through a flush task on the
// connection's event loop, EventLoop().Execute). Frames queued while a write
// is under way leave with it, in one write, in the order sent. A stage that
// answers a batch of requests queues its answers in an Outbox and writes
// each connection once. Send, Close, Context and SetContext are safe from
// any goroutine; after the connection is closed Send returns an error
// wrapping ErrConnClosed. A direct write holds the connection's state lock,
// which OnClose takes before gnet closes the descriptor, so a write never
// reaches a closed or reused descriptor.
//
// # Output caps
//
// A connection's buffered output (Conn.OutputBuffered: frames sent to it
// that the socket has not taken, in its outbox or in gnet's buffer) is
// capped, so that a peer that asks and never reads cannot grow the
// process's memory: above Config.MaxOutput Conn.Congested is true and the
// handler refuses new work (the broker answers SYSTEM_BUSY); a frame that
// would take it past Config.MaxOutputHard is dropped and the connection
// closed (Send returns an error wrapping ErrOutputFull); a connection that
// stays above MaxOutput for Config.StallTimeout is closed by a sweep on
// gnet's ticker. Both closes are logged with the remote address and the
// bytes buffered and counted in ServerStats.SlowClosed; see slow.go.
// The same sweep closes a connection that sent no request byte within
// Config.IdleTimeout of connecting (ServerStats.IdleClosed; idle.go).
//
// # TLS
//
// Config.TLS makes a port take TLS beside plaintext (TLSPermissive) or
// instead of it (TLSEnforcing), told apart by a connection's first byte.
// A TLS connection's handshake and records run on a goroutine of its own,
// never on an event loop: the loop moves the bytes it reads to that
// goroutine, which decrypts them and calls the Handler as the loop does
// for plaintext; Conn.Send encrypts on the sending goroutine and writes
// through the same outbox, under the same output caps. See tls.go.
//
// # Concurrency
//
// With several event loops, callbacks for different connections run
// concurrently; callbacks for one connection are serialized, on its loop
// (a TLS connection's OnCommand, OnFrame and OnClose: on its goroutine).
// Per-connection state lives in Conn (Context/SetContext are atomic), never
// in shared decoder buffers.
//
// # Stopping
//
// A clean stop goes Refuse (every request from then on is answered with a
// refusal on the event loop, the handler sees none; Refuse returns once no
// event loop is still in a read that missed it), then, once the owner's
// stages answered what they hold, Flush (every queued answer written),
// Hangup (each connection half-closed after its answers; what peers still
// send is dropped, new connections are closed at once; it waits for the
// peers to close, since closing a socket with unread input resets it and
// the peer's kernel drops the answers not read yet) and Stop.
//
// # Addresses
//
// Config.Addr may use port 0. Start returns once the listener is bound and
// Addr reports the real port, read back from the listening socket.
package netloop
