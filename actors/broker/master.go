package broker

// A replica's way to its master's gRPC endpoint: the gRPC front door of a
// replica forwards the calls only a master serves (sends, receives, acks,
// the client's session) to its group's master, so that a v5 client that
// reached any member of a group is served, and keeps being served across
// a failover (docs/grpc.md, "Replicated groups").

import (
	"context"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/role"
)

// masterEndpointTTL bounds how long a looked-up master endpoint is used
// without asking the name servers again; a change of master (the role's
// MasterAddr) forgets it at once.
const masterEndpointTTL = 10 * time.Second

// masterState caches the master's gRPC endpoint by its remoting address.
type masterState struct {
	mu       sync.Mutex
	addr     string // the master's remoting address the endpoint belongs to
	endpoint string
	at       time.Time
}

// ServesItself reports whether this broker answers every call itself
// rather than its master: any role but a replica's (a fenced master
// refuses sends itself: it is its group's master until the controller
// says otherwise). Safe from any goroutine; the check every gRPC call
// makes first.
func (b *Broker) ServesItself() bool { return b.p.Role().Get().Kind != role.Replica }

// MasterEndpoint is the gRPC endpoint of this broker's group master when
// this broker is a replica, and "" when it serves the call itself (a
// master, or a broker without replication). Refusals: NotMaster when the
// group has no master now (a promotion under way: retry), Unavailable
// when the master's endpoint is not registered with the name servers yet
// or they cannot be asked. It may ask the name servers (within ctx), so
// it is for front doors whose calls run on goroutines of their own.
func (b *Broker) MasterEndpoint(ctx context.Context) (string, *Error) {
	st := b.p.Role().Get()
	if st.Kind != role.Replica {
		return "", nil
	}
	if st.MasterAddr == "" {
		return "", Errorf(NotMaster, "broker %s is a replica and its group has no master now: retry later", b.cfg.BrokerName)
	}
	m := &b.master
	m.mu.Lock()
	if m.addr == st.MasterAddr && m.endpoint != "" && time.Since(m.at) < masterEndpointTTL {
		ep := m.endpoint
		m.mu.Unlock()
		return ep, nil
	}
	m.mu.Unlock()
	lp := b.cluster.lookup.Load()
	if lp == nil {
		return "", Errorf(Unavailable, "broker %s is a replica and has no name server to find its master %s's gRPC endpoint",
			b.cfg.BrokerName, st.MasterAddr)
	}
	info, err := (*lp).LookUpCluster(ctx)
	if err != nil {
		return "", Wrap(Unavailable, "find the master's gRPC endpoint: name servers", err)
	}
	ep := ""
	if bd, ok := info.BrokerAddrTable[b.cfg.BrokerName]; ok {
		for id, addr := range bd.BrokerAddrs {
			if addr == st.MasterAddr {
				ep = bd.GRPCEndpoints[id]
			}
		}
	}
	if own := b.routes.p.Load(); own != nil && ep == own.endpoint {
		// A registration that has not caught up with a promotion: never
		// forward to this broker itself.
		return "", Errorf(NotMaster, "broker %s: the name servers name this broker's endpoint as its master's: retry later", b.cfg.BrokerName)
	}
	if ep == "" {
		return "", Errorf(Unavailable, "broker %s: its master %s has no gRPC endpoint registered with the name servers yet: retry later",
			b.cfg.BrokerName, st.MasterAddr)
	}
	m.mu.Lock()
	m.addr, m.endpoint, m.at = st.MasterAddr, ep, time.Now()
	m.mu.Unlock()
	return ep, nil
}

// ForgetMasterEndpoint drops the cached master endpoint (a front door
// whose forwarded call found it dead), so that the next MasterEndpoint
// asks the name servers again.
func (b *Broker) ForgetMasterEndpoint(endpoint string) {
	m := &b.master
	m.mu.Lock()
	if m.endpoint == endpoint {
		m.endpoint = ""
	}
	m.mu.Unlock()
}
