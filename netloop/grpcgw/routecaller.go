package grpcgw

import (
	"context"
	"net/netip"

	"google.golang.org/grpc/peer"

	"github.com/wheelmq/wheelmq/actors/broker"
)

// peerAddr is the client's address as its connection shows it.
func peerAddr(ctx context.Context) netip.AddrPort {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if ap, err := netip.ParseAddrPort(p.Addr.String()); err == nil {
			return ap
		}
	}
	return netip.AddrPort{}
}

// routeCaller is s's call as the broker API names its caller: the
// verified account (empty without an ACL), the client's own address and
// id; the API decides the ACL (not Checked).
func (g *Gateway) routeCaller(ctx context.Context, s *session) broker.Caller {
	return broker.Caller{Protocol: broker.GRPC, Account: s.creds.AccessKey, Remote: peerAddr(ctx), ClientID: s.id}
}
