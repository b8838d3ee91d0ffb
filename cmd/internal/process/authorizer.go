package process

import (
	"net/netip"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// guardAuthorizer is the broker API's ACL (broker.Authorizer): the
// process's guard, asked about the caller's account from the caller's
// address.
type guardAuthorizer struct{ g *auth.Guard }

var _ broker.Authorizer = guardAuthorizer{}

// Authorize implements broker.Authorizer.
func (a guardAuthorizer) Authorize(c broker.Caller, n broker.Need) *broker.Error {
	acct, ok := a.g.Lookup(c.Account)
	if !ok {
		return broker.Errorf(broker.Forbidden, "account %q is unknown", c.Account)
	}
	ip := c.Remote.Addr()
	if !ip.IsValid() {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if !acct.FromAllowed(ip) {
		return broker.Errorf(broker.Forbidden, "account %s may not be used from %s", acct.Name(), ip)
	}
	if acct.IsAdmin() {
		return nil
	}
	var need auth.Need
	switch n.Kind {
	case broker.KindTopic:
		need = auth.TopicNeed(n.Name, authPerm(n.Perm))
	case broker.KindGroup:
		need = auth.GroupNeed(n.Name, authPerm(n.Perm))
	default:
		return broker.Errorf(broker.Forbidden, "account %s is not an admin", acct.Name())
	}
	if n.Perm == broker.Admin {
		return broker.Errorf(broker.Forbidden, "account %s is not an admin", acct.Name())
	}
	if ok, rule := acct.Allows(need, ip); !ok {
		return broker.Errorf(broker.Forbidden, "account %s has no %s permission on %s (%s)", acct.Name(), permName(n.Perm), n.Name, rule)
	}
	return nil
}

// authPerm is the ACL bit of an API permission.
func authPerm(p broker.Perm) auth.Perm {
	if p == broker.Pub {
		return auth.PermPub
	}
	return auth.PermSub
}

// permName names an API permission in a refusal.
func permName(p broker.Perm) string {
	switch p {
	case broker.Pub:
		return "PUB"
	case broker.Sub:
		return "SUB"
	}
	return "admin"
}
