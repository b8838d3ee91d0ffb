package grpcgw

// A replica's endpoint serves its group's clients by forwarding. The
// routes list every member of a replicated group (broker.RouteBroker's
// Replicas), so a v5 SDK connects to any of them (the SDK dials the list
// with gRPC's pick-first, and moves to another address when its
// connection dies). On a replica, every call that only a master serves
// (everything but QueryRoute and QueryAssignment, which every member
// answers from the cluster's routes) is passed to the group's master as
// it came, its frames copied unparsed both ways: the master checks the
// signature, answers, and holds the session. When the master dies, the
// calls in flight fail, and the next ones go to the new master as soon as
// this replica knows it (broker.MasterEndpoint); a unary call that found
// no master is tried again within its deadline, and then, like a stream
// that finds none, answered by the replica itself (which refuses in band,
// HA_NOT_AVAILABLE, what only a master serves: the SDKs close their
// connection on a gRPC UNAVAILABLE).
//
// The client's address travels in x-wheelmq-forwarded-for, signed with the
// group's replication secret (see forwardfor.go): the master uses it for
// BornHost, its client lists and ACL address rules.

import (
	"context"
	"errors"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/wheelmq/wheelmq/actors/broker"
)

// forwardRetryPause is the pause between two tries of a unary call whose
// master could not be reached (a failover under way).
const forwardRetryPause = 100 * time.Millisecond

// forwardDefaultWait bounds the tries of a unary call without a deadline.
const forwardDefaultWait = 5 * time.Second

// forwardAnswerReserve is what a unary call's tries leave of its
// deadline for the replica's own answer.
const forwardAnswerReserve = 300 * time.Millisecond

// localMethods are answered by every member: the routes of the cluster.
var localMethods = map[string]bool{"QueryRoute": true, "QueryAssignment": true}

// frame is one message of a forwarded call, unparsed.
type frame struct{ b []byte }

// passCodec is the server's and the forwarder's codec: protobuf, except
// that a *frame passes as it is.
type passCodec struct{ proto encoding.CodecV2 }

func newPassCodec() passCodec { return passCodec{proto: encoding.GetCodecV2("proto")} }

// Marshal encodes v (a frame's bytes as they are).
func (c passCodec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*frame); ok {
		return mem.BufferSlice{mem.SliceBuffer(f.b)}, nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal decodes data into v (a frame keeps a copy of the bytes).
func (c passCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*frame); ok {
		f.b = data.Materialize()
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

// Name is the content subtype the codec serves.
func (passCodec) Name() string { return "proto" }

// forwarder holds the connection to the group's master.
type forwarder struct {
	g     *Gateway
	codec passCodec
	creds credentials.TransportCredentials

	mu     sync.Mutex
	ep     string // the endpoint conn dials
	conn   *grpc.ClientConn
	closed bool // Stop: no new connection
}

func newForwarder(g *Gateway) *forwarder {
	f := &forwarder{g: g, codec: newPassCodec(), creds: insecure.NewCredentials()}
	if g.opts.ForwardTLS != nil {
		f.creds = credentials.NewTLS(g.opts.ForwardTLS)
	}
	return f
}

// serveHere reports whether this broker serves every call itself (no
// broker API, or any role but a replica's): the check every call makes
// first, without a lookup.
func (f *forwarder) serveHere() bool {
	return f.g.opts.Broker == nil || f.g.opts.Broker.ServesItself()
}

// target is the connection to the master, or nil when this broker serves
// the call itself; a refusal when it is a replica whose master cannot be
// reached now.
func (f *forwarder) target(ctx context.Context) (*grpc.ClientConn, string, *broker.Error) {
	if f.g.opts.Broker == nil {
		return nil, "", nil
	}
	ep, be := f.g.opts.Broker.MasterEndpoint(ctx)
	if be != nil || ep == "" {
		return nil, "", be
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, "", broker.Errorf(broker.Unavailable, "the gRPC endpoint is stopping")
	}
	if f.conn != nil && f.ep == ep {
		conn := f.conn
		f.mu.Unlock()
		return conn, ep, nil
	}
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(f.creds), // connects lazily: no I/O here
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(f.codec),
			grpc.MaxCallRecvMsgSize(32*(f.g.opts.MaxMessageSize+recvMargin)),
			grpc.MaxCallSendMsgSize(f.g.opts.MaxMessageSize+recvMargin)))
	if err != nil {
		f.mu.Unlock()
		return nil, "", broker.Wrap(broker.Unavailable, "forward to the master's endpoint "+ep, err)
	}
	old := f.conn
	f.conn, f.ep = conn, ep
	f.mu.Unlock()
	if old != nil {
		_ = old.Close() // ends only the calls still on it: they were the old master's
	}
	f.g.log.Info().Str("master", ep).Msg("grpc: forwarding the calls only a master serves to the group's master")
	return conn, ep, nil
}

// close closes the connection to the master, and no other is made (Stop).
func (f *forwarder) close() {
	f.mu.Lock()
	conn := f.conn
	f.conn, f.ep, f.closed = nil, "", true
	f.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// outgoing is ctx for the master: the client's metadata (signature,
// client id, namespace) without the transport's own headers, and the
// client's address, signed.
func (f *forwarder) outgoing(ctx context.Context, method string) context.Context {
	in, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{}
	for k, v := range in {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") || k == "content-type" || k == "user-agent" ||
			k == "te" || k == forwardedForKey {
			continue
		}
		out[k] = v
	}
	if a := peerAddr(ctx); a.IsValid() && f.g.opts.ForwardSecret != nil {
		out.Set(forwardedForKey, signForwardedFor(f.g.opts.ForwardSecret, a.String(), path.Base(method), time.Now()))
	}
	return metadata.NewOutgoingContext(ctx, out)
}

// forwardUnary is the unary interceptor that passes a replica's calls to
// its master, trying again while no master can be reached, within the
// call's deadline.
func (g *Gateway) forwardUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if localMethods[path.Base(info.FullMethod)] || g.fwd.serveHere() {
		return h(ctx, req) // the common case: a master, or a broker without replication
	}
	// The tries end early enough to leave the replica's own answer time.
	end := time.Now().Add(forwardDefaultWait)
	if d, ok := ctx.Deadline(); ok {
		end = d.Add(-min(forwardAnswerReserve, time.Until(d)/4))
	}
	wait, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	for {
		conn, ep, be := g.fwd.target(wait)
		if be == nil && conn == nil {
			return h(ctx, req)
		}
		var err error
		if be == nil {
			out := &frame{}
			if err = conn.Invoke(g.fwd.outgoing(wait, info.FullMethod), info.FullMethod, req, out); err == nil {
				g.m.forwarded.WithLabelValues(path.Base(info.FullMethod), "OK").Inc()
				return out, nil
			}
			if status.Code(err) != codes.Unavailable {
				g.m.forwarded.WithLabelValues(path.Base(info.FullMethod), status.Code(err).String()).Inc()
				return nil, err
			}
			g.opts.Broker.ForgetMasterEndpoint(ep)
		} else {
			err = status.Error(codes.Unavailable, be.Error())
		}
		select {
		case <-wait.Done():
			// Answered here: a replica's own answer refuses in band what only
			// a master serves (HA_NOT_AVAILABLE), as the SDKs expect.
			g.m.forwarded.WithLabelValues(path.Base(info.FullMethod), codes.Unavailable.String()).Inc()
			g.log.Debug().Err(err).Str("method", path.Base(info.FullMethod)).Msg("grpc: no master reachable, answered by the replica")
			return h(ctx, req)
		case <-time.After(forwardRetryPause):
		}
	}
}

// forwardStream is the stream interceptor that passes a replica's streams
// (ReceiveMessage, Telemetry) to its master, frame by frame.
func (g *Gateway) forwardStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if g.fwd.serveHere() {
		return h(srv, ss)
	}
	ctx := ss.Context()
	conn, ep, be := g.fwd.target(ctx)
	if be == nil && conn == nil {
		return h(srv, ss)
	}
	method := path.Base(info.FullMethod)
	if be != nil {
		// No master now: the replica answers (a receive is refused in band,
		// HA_NOT_AVAILABLE; a Telemetry stream is served here).
		g.m.forwarded.WithLabelValues(method, codes.Unavailable.String()).Inc()
		return h(srv, ss)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.stopCtx, cancel)() // Stop ends forwarded streams too
	cs, err := conn.NewStream(g.fwd.outgoing(ctx, info.FullMethod),
		&grpc.StreamDesc{StreamName: method, ServerStreams: true, ClientStreams: true}, info.FullMethod)
	if err != nil {
		g.opts.Broker.ForgetMasterEndpoint(ep)
		g.m.forwarded.WithLabelValues(method, status.Code(err).String()).Inc()
		return err
	}
	// The client's frames to the master, on a goroutine of the gateway's:
	// it ends with the client's half (EOF), or with the call, whose
	// context ends when this handler has returned.
	g.goOwned("forward "+method, func() {
		for {
			in := &frame{}
			if err := ss.RecvMsg(in); err != nil {
				if errors.Is(err, io.EOF) {
					_ = cs.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if err := cs.SendMsg(in); err != nil {
				return // the master's side ends the call: its status comes from RecvMsg below
			}
		}
	})
	if md, err := cs.Header(); err == nil && len(md) > 0 {
		_ = ss.SendHeader(md)
	}
	for {
		out := &frame{}
		if err := cs.RecvMsg(out); err != nil {
			ss.SetTrailer(cs.Trailer())
			cancel()
			if errors.Is(err, io.EOF) {
				g.m.forwarded.WithLabelValues(method, "OK").Inc()
				return nil
			}
			if status.Code(err) == codes.Unavailable {
				g.opts.Broker.ForgetMasterEndpoint(ep)
			}
			g.m.forwarded.WithLabelValues(method, status.Code(err).String()).Inc()
			return err
		}
		if err := ss.SendMsg(out); err != nil {
			cancel()
			return err
		}
	}
}
