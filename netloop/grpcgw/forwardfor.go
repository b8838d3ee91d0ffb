package grpcgw

// x-wheelmq-forwarded-for: the address of a client whose call a replica
// forwarded to its master (forward.go), proven with the group's
// replication secret so that nobody else can claim an address:
//
//	x-wheelmq-forwarded-for: <ip:port> <unix ms> <base64url(HMAC-SHA256(secret, m))>
//	m = "wheelmq-grpc-forwarded-for-v1\n" + ip:port + "\n" + unix ms + "\n" + method
//
// (method: the call's short name, e.g. SendMessage). The master takes the
// address as the call's peer (BornHost, client lists, ACL address rules)
// when the proof checks out and the time is within forwardedForSkew of its
// clock; a call that carries the header with a bad proof, an old time, or
// to a broker without a secret is refused PERMISSION_DENIED and changes
// nothing. A captured header names the same client for at most the skew,
// and only for the method it was made for.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// forwardedForKey is the header's name.
const forwardedForKey = "x-wheelmq-forwarded-for"

// forwardedForLabel separates this use of the replication secret.
const forwardedForLabel = "wheelmq-grpc-forwarded-for-v1"

// forwardedForSkew bounds how far the header's time may be from the
// master's clock, either way.
const forwardedForSkew = 30 * time.Second

// forwardedForMAC is the header's proof.
func forwardedForMAC(secret []byte, addr, ms, method string) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s\n%s\n%s\n%s", forwardedForLabel, addr, ms, method)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signForwardedFor is the header's value for addr's call of method at now.
func signForwardedFor(secret []byte, addr, method string, now time.Time) string {
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	return addr + " " + ms + " " + forwardedForMAC(secret, addr, ms, method)
}

// checkForwardedFor is the client address v proves for method, or why
// it proves nothing.
func checkForwardedFor(secret []byte, v, method string, now time.Time) (netip.AddrPort, error) {
	if secret == nil {
		return netip.AddrPort{}, fmt.Errorf("%s: this broker has no replication secret to check it with", forwardedForKey)
	}
	parts := strings.Split(v, " ")
	if len(parts) != 3 {
		return netip.AddrPort{}, fmt.Errorf("%s: want \"<ip:port> <unix ms> <proof>\"", forwardedForKey)
	}
	addr, err := netip.ParseAddrPort(parts[0])
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s: address: %w", forwardedForKey, err)
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s: time: %w", forwardedForKey, err)
	}
	if d := now.Sub(time.UnixMilli(ms)); d > forwardedForSkew || d < -forwardedForSkew {
		return netip.AddrPort{}, fmt.Errorf("%s: signed %v from this broker's clock (at most %v)", forwardedForKey, d.Round(time.Millisecond), forwardedForSkew)
	}
	want := forwardedForMAC(secret, parts[0], parts[1], method)
	if !hmac.Equal([]byte(want), []byte(parts[2])) {
		return netip.AddrPort{}, fmt.Errorf("%s: the proof does not match (not signed with this group's replication secret)", forwardedForKey)
	}
	return addr, nil
}

// forwardedPeer is ctx with the forwarded client's address as its peer
// when the call carries a good header, ctx as it is when it carries
// none, and a PERMISSION_DENIED status when it carries a bad one.
func (g *Gateway) forwardedPeer(ctx context.Context, fullMethod string) (context.Context, error) {
	vs := metadata.ValueFromIncomingContext(ctx, forwardedForKey) // no copy of the whole metadata: every call comes here
	if len(vs) == 0 {
		return ctx, nil
	}
	method := path.Base(fullMethod)
	addr, err := checkForwardedFor(g.opts.ForwardSecret, vs[0], method, time.Now())
	if err != nil || len(vs) > 1 {
		if err == nil {
			err = fmt.Errorf("%s given %d times", forwardedForKey, len(vs))
		}
		g.m.forwardRefused.Inc()
		g.log.Warn().Err(err).Str("method", method).Str("from", peerAddr(ctx).String()).Msg("grpc: forwarded call refused")
		return ctx, status.Error(codes.PermissionDenied, err.Error())
	}
	p := &peer.Peer{Addr: net.TCPAddrFromAddrPort(addr)}
	if old, ok := peer.FromContext(ctx); ok {
		p.AuthInfo = old.AuthInfo
	}
	return peer.NewContext(ctx, p), nil
}

// forwardedForUnary is the unary interceptor of forwardedPeer.
func (g *Gateway) forwardedForUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := g.forwardedPeer(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// forwardedForStream is the stream interceptor of forwardedPeer.
func (g *Gateway) forwardedForStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := g.forwardedPeer(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if ctx == ss.Context() {
		return h(srv, ss)
	}
	return h(srv, peerStream{ServerStream: ss, ctx: ctx})
}

// peerStream is a stream whose context names the forwarded client.
type peerStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context is the stream's context with the forwarded peer.
func (s peerStream) Context() context.Context { return s.ctx }
