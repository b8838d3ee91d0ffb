package process

// The broker's route lookup at its name servers, for the gRPC endpoint's
// cluster-wide routes (actors/broker.RouteLookup).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// nsLookupTimeout bounds one GET_ROUTEINFO_BY_TOPIC to one name server,
// dial included.
const nsLookupTimeout = time.Second

// nsRoutes asks the name servers in turn, starting with the last one that
// answered, over one kept connection each; requests are signed with the
// broker's registration credentials (an admin account under an ACL).
type nsRoutes struct {
	addrs []string
	tls   *tls.Config
	creds auth.Credentials
	log   zerolog.Logger
	next  atomic.Int32

	mu     sync.Mutex
	conns  map[string]*remoting.Client
	closed bool
}

// newNSRoutes returns the lookup over addrs.
func newNSRoutes(addrs []string, cfg *tls.Config, creds auth.Credentials, log zerolog.Logger) *nsRoutes {
	return &nsRoutes{addrs: addrs, tls: cfg, creds: creds, log: log, conns: map[string]*remoting.Client{}}
}

// errLookupClosed: the lookup was closed (the process stops).
var errLookupClosed = errors.New("route lookup closed")

// LookUpRoute implements broker.RouteLookup.
func (l *nsRoutes) LookUpRoute(ctx context.Context, topic string) (*namesrv.TopicRouteData, error) {
	start := int(l.next.Load())
	var errs []error
	for k := range l.addrs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		i := (start + k) % len(l.addrs)
		cctx, cancel := context.WithTimeout(ctx, nsLookupTimeout)
		rd, answered, err := l.ask(cctx, l.addrs[i], topic)
		cancel()
		if answered {
			l.next.Store(int32(i))
			return rd, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("route of %s from %d name servers: %w", topic, len(l.addrs), errors.Join(errs...))
}

// ask sends GET_ROUTEINFO_BY_TOPIC to one name server; answered reports a
// definite answer (the route, or none for an unknown topic).
func (l *nsRoutes) ask(ctx context.Context, addr, topic string) (rd *namesrv.TopicRouteData, answered bool, err error) {
	c, err := l.conn(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	req := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic, "acceptStandardJsonOnly": "true"}, nil)
	l.creds.Sign(req)
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		l.drop(addr, c)
		return nil, false, fmt.Errorf("name server %s: %w", addr, err)
	}
	switch resp.Code {
	case remoting.Success:
		rd, err := namesrv.ParseRouteData(resp.Body)
		if err != nil {
			return nil, false, fmt.Errorf("name server %s: route of %s: %w", addr, topic, err)
		}
		return rd, true, nil
	case remoting.TopicNotExist:
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("name server %s: route of %s: code %d: %s", addr, topic, resp.Code, resp.Remark)
}

// conn is the kept connection to addr, dialed when there is none.
func (l *nsRoutes) conn(ctx context.Context, addr string) (*remoting.Client, error) {
	l.mu.Lock()
	c := l.conns[addr]
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, errLookupClosed
	}
	if c != nil && c.Err() == nil {
		return c, nil
	}
	nc, err := remoting.Dial(ctx, addr, remoting.ClientOptions{Logger: l.log, TLS: l.tls})
	if err != nil {
		return nil, fmt.Errorf("dial name server %s: %w", addr, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = nc.Close()
		return nil, errLookupClosed
	}
	if cur := l.conns[addr]; cur != nil && cur != c && cur.Err() == nil {
		_ = nc.Close() // another lookup dialed meanwhile
		return cur, nil
	}
	if c != nil {
		_ = c.Close()
	}
	l.conns[addr] = nc
	return nc, nil
}

// drop closes c, the connection to addr that failed.
func (l *nsRoutes) drop(addr string, c *remoting.Client) {
	l.mu.Lock()
	if l.conns[addr] == c {
		delete(l.conns, addr)
	}
	l.mu.Unlock()
	_ = c.Close()
}

// Close closes every connection; later lookups fail.
func (l *nsRoutes) Close() {
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
