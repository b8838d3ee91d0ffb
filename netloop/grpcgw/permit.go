package grpcgw

// Permission checks of the calls the gateway answers in process (no
// remoting request carries them to the broker's ACL any more).

import (
	"context"
	"fmt"
	"net/netip"
	"path"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// remoteOf is the client's address as its connection shows it.
func remoteOf(ctx context.Context) netip.AddrPort {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if ap, err := netip.ParseAddrPort(p.Addr.String()); err == nil {
			return ap
		}
	}
	return netip.AddrPort{}
}

// callerOf is s's call as the broker API names its caller.
func (g *Gateway) apiCaller(ctx context.Context, s *session) broker.Caller {
	return broker.Caller{Protocol: broker.GRPC, Account: s.creds.AccessKey, Remote: remoteOf(ctx), ClientID: s.id}
}

// permit checks that s's account has every need under the ACL (nil
// status: allowed, or no ACL), as the broker's port checks a remoting
// request: the account's address rule, then each need; an admin account
// may do everything. A refusal is counted and logged like the port's.
func (g *Gateway) permit(ctx context.Context, s *session, needs ...auth.Need) *v2.Status {
	guard := g.verify.guard
	if guard == nil {
		return nil
	}
	remote := remoteOf(ctx)
	method, _ := grpc.Method(ctx)
	acct, ok := guard.Lookup(s.creds.AccessKey)
	if !ok {
		ref := &auth.Refusal{Reason: auth.ReasonUnknownKey, Remark: authFailedRemark}
		guard.RefusedCall(remote, path.Base(method), s.creds.AccessKey, ref)
		return statusf(v2.Code_UNAUTHORIZED, "%s", ref.Remark)
	}
	ip := remote.Addr().Unmap()
	var ref *auth.Refusal
	switch {
	case !acct.FromAllowed(ip):
		ref = &auth.Refusal{Reason: auth.ReasonAddress, Remark: fmt.Sprintf("[ACL] accessKey %s may not be used from %s", acct.Name(), ip)}
	case acct.IsAdmin():
		return nil
	default:
		for _, n := range needs {
			if ok, rule := acct.Allows(n, ip); !ok {
				ref = &auth.Refusal{Reason: auth.ReasonPermission, Remark: fmt.Sprintf("[ACL] accessKey %s: no %s on %s %s (rule %s)",
					acct.Name(), auth.PermString(n.Perm), n.Kind, n.Name, rule)}
				break
			}
		}
	}
	if ref == nil {
		return nil
	}
	guard.RefusedCall(remote, path.Base(method), acct.Name(), ref)
	return statusf(v2.Code_FORBIDDEN, "%s", ref.Remark)
}
