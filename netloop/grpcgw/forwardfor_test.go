package grpcgw

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// TestForwardedForProof: a replica's signed client address checks out at a
// master with the same secret, for the method it was made for, within the
// skew; another secret, another method, an old or future time, a changed
// address, a malformed value and a broker without a secret prove nothing.
func TestForwardedForProof(t *testing.T) {
	secret := []byte("0123456789abcdef-group-secret")
	now := time.UnixMilli(1_764_000_000_000)
	v := signForwardedFor(secret, "10.1.2.3:40000", "SendMessage", now)
	addr, err := checkForwardedFor(secret, v, "SendMessage", now.Add(time.Second))
	if err != nil || addr.String() != "10.1.2.3:40000" {
		t.Fatalf("good proof: %v %v", addr, err)
	}
	parts := strings.Split(v, " ")
	bad := map[string]struct {
		secret []byte
		v      string
		method string
		at     time.Time
	}{
		"another secret":   {[]byte("another-secret-of-16+"), v, "SendMessage", now},
		"another method":   {secret, v, "AckMessage", now},
		"too old":          {secret, v, "SendMessage", now.Add(forwardedForSkew + time.Second)},
		"from the future":  {secret, v, "SendMessage", now.Add(-forwardedForSkew - time.Second)},
		"changed address":  {secret, "10.1.2.4:40000 " + parts[1] + " " + parts[2], "SendMessage", now},
		"changed time":     {secret, parts[0] + " " + parts[1] + "1 " + parts[2], "SendMessage", now},
		"no proof":         {secret, parts[0] + " " + parts[1], "SendMessage", now},
		"not an address":   {secret, "host:1 " + parts[1] + " " + parts[2], "SendMessage", now},
		"no secret here":   {nil, v, "SendMessage", now},
		"empty":            {secret, "", "SendMessage", now},
		"proof of nothing": {secret, parts[0] + " " + parts[1] + " AAAA", "SendMessage", now},
	}
	for name, c := range bad {
		if a, err := checkForwardedFor(c.secret, c.v, c.method, c.at); err == nil {
			t.Errorf("%s: accepted as %v", name, a)
		}
	}
}

// TestForwardedPeerInterceptor: a call with a good forwarded address is
// served as if from that address; with a bad one it is refused
// PERMISSION_DENIED before its handler runs; without one it keeps its
// transport peer.
func TestForwardedPeerInterceptor(t *testing.T) {
	secret := []byte("0123456789abcdef-group-secret")
	g, err := New(Options{Listen: "127.0.0.1:0", ForwardSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	transport := &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5555}}
	info := &grpc.UnaryServerInfo{FullMethod: "/apache.rocketmq.v2.MessagingService/SendMessage"}
	call := func(md metadata.MD) (string, error) {
		ctx := peer.NewContext(metadata.NewIncomingContext(context.Background(), md), transport)
		var seen string
		_, err := g.forwardedForUnary(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
			seen = peerAddr(ctx).String()
			return nil, nil
		})
		return seen, err
	}
	if seen, err := call(metadata.MD{}); err != nil || seen != "127.0.0.1:5555" {
		t.Fatalf("no header: peer %q, %v", seen, err)
	}
	good := signForwardedFor(secret, "10.1.2.3:40000", "SendMessage", time.Now())
	if seen, err := call(metadata.Pairs(forwardedForKey, good)); err != nil || seen != "10.1.2.3:40000" {
		t.Fatalf("good header: peer %q, %v", seen, err)
	}
	forged := signForwardedFor([]byte("not-the-group-secret"), "10.1.2.3:40000", "SendMessage", time.Now())
	for name, md := range map[string]metadata.MD{
		"forged":   metadata.Pairs(forwardedForKey, forged),
		"replayed": metadata.Pairs(forwardedForKey, signForwardedFor(secret, "10.1.2.3:40000", "SendMessage", time.Now().Add(-time.Hour))),
		"twice":    metadata.Pairs(forwardedForKey, good, forwardedForKey, good),
	} {
		seen, err := call(md)
		if status.Code(err) != codes.PermissionDenied || seen != "" {
			t.Errorf("%s header: handler saw %q, err %v; want PERMISSION_DENIED before the handler", name, seen, err)
		}
	}
}
