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
// Handlers run on an event loop and must not block: they copy what they
// need, hand the work to actors, and answer later with Conn.Send, which
// appends the encoded frame to the connection's outbox and, unless one is
// already pending, schedules a flush task on the connection's event loop
// (EventLoop().Execute): every frame queued before the task runs leaves in
// one write, in the order sent. Send, Close,
// Context and SetContext are safe from any goroutine; after the connection
// is closed Send returns an error wrapping ErrConnClosed.
//
// # Concurrency
//
// With several event loops, callbacks for different connections run
// concurrently; callbacks for one connection are serialized on its loop.
// Per-connection state lives in Conn (Context/SetContext are atomic), never
// in shared decoder buffers.
//
// # Addresses
//
// Config.Addr may use port 0. Start returns once the listener is bound and
// Addr reports the real port, read back from the listening socket.
package netloop
