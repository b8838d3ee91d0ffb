package auth

import (
	"net/netip"
)

// CheckVerified decides a request of an account its front door verified
// already (a gRPC call, whose signature the gateway checked), read from
// remote: the address rule and needs, as Check decides a signed remoting
// request after its signature. code names the request in the remark of
// an admin-only refusal. A refusal is counted and logged like Check's.
func (g *Guard) CheckVerified(remote netip.AddrPort, accessKey string, code int32, needs Needs) *Refusal {
	dir, _ := g.directory()
	ip := remote.Addr().Unmap()
	ref := g.decideVerified(dir, ip, accessKey, code, needs)
	if ref != nil {
		g.refused(remote, code, accessKey, ref)
	}
	return ref
}

func (g *Guard) decideVerified(dir Directory, ip netip.Addr, ak string, code int32, needs Needs) *Refusal {
	if g.bypass {
		if b, ok := dir.(globalBypasser); ok && b.GlobalBypass(ip) {
			g.bypassed.Inc()
			return nil
		}
	}
	if ak == "" {
		return &Refusal{ReasonAnonymous, "[ACL] anonymous request refused: sign it with an AccessKey"}
	}
	acct, ok := dir.Lookup(ak)
	if !ok {
		return &Refusal{ReasonUnknownKey, authFailed(ak)}
	}
	if g.bypass {
		if b, ok := acct.(bypasser); ok && b.BypassFrom(ip) {
			g.bypassed.Inc()
			return nil
		}
	}
	return decideAccount(acct, ip, code, needs)
}
