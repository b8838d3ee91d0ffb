package grpcgw

import (
	"context"
	"path"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wheelmq/wheelmq/actors/recovery"
)

// Failure stays local: a panic in a handler (unary or stream) becomes
// that call's INTERNAL status, a count in
// wheelmq_handler_panics_total{protocol="grpc",kind=<method>} and one
// error line with the method and the stack; the connection, its other
// streams and the gateway serve on. The interceptors are the innermost of
// the chain, so the call metrics count the INTERNAL answer.

// recoverUnary is the unary interceptor that recovers a handler's panic.
func (g *Gateway) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recovery.Recovered(recover()); p != nil {
			resp, err = nil, g.panicked(info.FullMethod, p)
		}
	}()
	return h(ctx, req)
}

// recoverStream is the stream interceptor that recovers a handler's panic.
func (g *Gateway) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if p := recovery.Recovered(recover()); p != nil {
			err = g.panicked(info.FullMethod, p)
		}
	}()
	return h(srv, ss)
}

// panicked counts and logs a handler's panic and returns the call's error.
func (g *Gateway) panicked(fullMethod string, p *recovery.Panic) error {
	method := path.Base(fullMethod)
	g.panics.WithLabelValues("grpc", method).Inc()
	recovery.Log(g.log, p, "grpc "+method)
	return status.Errorf(codes.Internal, "%s failed in the broker; see its log", method)
}

// goOwned runs f on a goroutine of the gateway (counted in wg, waited for
// by Stop); a panic in it is counted and logged as the goroutine named
// kind, and the goroutine ends.
func (g *Gateway) goOwned(kind string, f func()) {
	recovery.Go(&g.wg, func(p *recovery.Panic) {
		g.panics.WithLabelValues("internal", "grpc "+kind).Inc()
		recovery.Log(g.log, p, "grpc "+kind)
	}, f)
}
