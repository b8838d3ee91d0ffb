package broker

// Routes for RocketMQ 5 clients: a topic's queues on every broker of the
// cluster, each with the gRPC endpoint that serves it, as RocketMQ's
// proxy in local mode answers them (LocalTopicRouteService): a client
// that knows one endpoint uses every broker.

import (
	"cmp"
	"context"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// RouteLookup asks the broker's name servers for a topic's route. A nil
// route with a nil error means the name servers answered that they do not
// know the topic; an error, that none answered.
type RouteLookup interface {
	LookUpRoute(ctx context.Context, topic string) (*namesrv.TopicRouteData, error)
}

// routing is what ServeRoutes set.
type routing struct {
	lookup   RouteLookup // nil: this broker's queues only
	endpoint string      // this broker's gRPC endpoint, host:port
}

// Bounds of the name-server lookup of a route: well within the SDKs'
// request timeout (3 s), so that a hanging name server costs the answer
// its freshness, never the answer.
const (
	// routeLookupBudget bounds the whole lookup of one route.
	routeLookupBudget = 1500 * time.Millisecond
	// lastRouteTTL is how long a route the name servers answered stands
	// in when they cannot be asked (their own expiry of a silent broker).
	lastRouteTTL = 2 * time.Minute
	// lastRoutesMax bounds the routes kept for that.
	lastRoutesMax = 4096
)

// routeState holds the routing of a Broker (set once its gRPC endpoint
// is up) and the last route the name servers answered per topic.
type routeState struct {
	p    atomic.Pointer[routing]
	mu   sync.Mutex
	last map[string]lastRoute
}

// lastRoute is a route the name servers answered, and when.
type lastRoute struct {
	rd *namesrv.TopicRouteData
	at time.Time
}

// lookUp asks rt's name servers for topic's route within
// routeLookupBudget, keeping what they answer; when they cannot answer it
// returns the last answer younger than lastRouteTTL, and the error.
func (s *routeState) lookUp(ctx context.Context, rt *routing, topic string) (*namesrv.TopicRouteData, error) {
	lctx, cancel := context.WithTimeout(ctx, routeLookupBudget)
	defer cancel()
	rd, err := rt.lookup.LookUpRoute(lctx, topic)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		if s.last == nil || len(s.last) >= lastRoutesMax {
			s.last = map[string]lastRoute{}
		}
		s.last[topic] = lastRoute{rd: rd, at: now}
		return rd, nil
	}
	if l, ok := s.last[topic]; ok && now.Sub(l.at) < lastRouteTTL {
		return l.rd, err
	}
	return nil, err
}

// ServeRoutes makes Route answer every broker's queues, found through
// lookup (nil: this broker's only), with endpoint as this broker's gRPC
// endpoint. Safe from any goroutine; call it once the endpoint listens.
func (b *Broker) ServeRoutes(lookup RouteLookup, endpoint string) {
	b.routes.p.Store(&routing{lookup: lookup, endpoint: endpoint})
}

// Endpoint is this broker's gRPC endpoint ("" before ServeRoutes).
func (b *Broker) Endpoint() string {
	if r := b.routes.p.Load(); r != nil {
		return r.endpoint
	}
	return ""
}

// RouteBroker is one broker group's part of a route.
type RouteBroker struct {
	// Name is the broker (group) name.
	Name string
	// Endpoint is the gRPC endpoint ("host:port") that serves the
	// group's queues: its master's.
	Endpoint string
	// Replicas are the gRPC endpoints of the group's other members, by
	// broker id: each forwards what only a master serves to the master,
	// so a client may use any of them, and goes on using them when the
	// master dies (MasterEndpoint).
	Replicas []string
	// Self is this broker's own group.
	Self bool
	// ReadQueues, WriteQueues and Perm are the topic's queues on the
	// group and their permission (meta.Perm* bits).
	ReadQueues, WriteQueues, Perm int32
}

// Route is a topic's queues on every broker of the cluster that has it.
type Route struct {
	Topic string
	// Config is this broker's configuration of the topic (its attributes
	// give the message types the route accepts); zero with Known false
	// when this broker does not have the topic.
	Config meta.TopicConfig
	Known  bool
	// Brokers are the groups with the topic, by name; groups without a
	// master now (between two masters) are left out.
	Brokers []RouteBroker
}

// Route answers topic's route: this broker's queues from its own table
// and every other group's from the name servers (RouteLookup), each with
// the gRPC endpoint of the group's master. A group's endpoint is the one
// its master registered (namesrv.BrokerData.GRPCEndpoints); a group whose
// master registered none (a Java name server, which drops the field) is
// reached at its master's host with this broker's gRPC port, RocketMQ's
// proxy convention. On a replica its own group's queues point at its
// master. With create, a topic no broker has is created here first
// (Topic's rule). When the name servers cannot be asked the route holds
// their last answer of the last two minutes, or else this broker's queues
// only (logged); the lookup takes 1.5 s at most. It blocks on the name servers
// (within ctx): call it from a goroutine of its own, never an event loop.
// The caller needs PUB or SUB on the topic (as a route lookup at a name
// server), and PUB to create it. Refusals: Topic's, and TopicNotFound
// when no group with a master has the topic.
func (b *Broker) Route(ctx context.Context, c Caller, topic string, create bool) (*Route, error) {
	if err := meta.ValidateTopic(topic); err != nil {
		return nil, Wrap(BadRequest, "topic name", err)
	}
	if err := b.authorizeTopic(c, topic); err != nil {
		return nil, err
	}
	cfg, err := b.topicWait(ctx, c, topic, false)
	known := err == nil
	if !known && StatusOf(err) != TopicNotFound {
		return nil, err
	}
	rt := b.routes.p.Load()
	if rt == nil {
		rt = &routing{}
	}
	var rd *namesrv.TopicRouteData
	if rt.lookup != nil {
		if rd, err = b.routes.lookUp(ctx, rt, topic); err != nil {
			b.log.Warn().Err(err).Str("topic", topic).Bool("last_answer", rd != nil).
				Msg("route: name servers not reachable, answering their last answer or this broker's queues only")
		}
	}
	if !known && create && rd == nil {
		// Nobody has it: make it here, as the first send would.
		if cfg, err = b.topicWait(ctx, c, topic, true); err != nil {
			return nil, err
		}
		known = true
	}
	out := &Route{Topic: topic, Config: cfg, Known: known}
	self := b.cfg.BrokerName
	st := b.p.Role().Get()
	if known && st.IsMaster() {
		out.Brokers = append(out.Brokers, RouteBroker{Name: self, Endpoint: rt.endpoint, Self: true,
			Replicas: groupReplicas(rd, self, rt.endpoint), ReadQueues: cfg.ReadQueueNums, WriteQueues: cfg.WriteQueueNums, Perm: cfg.Perm})
	}
	if rd != nil {
		for _, qd := range rd.QueueDatas {
			if qd.BrokerName == self && st.IsMaster() && known {
				continue // this broker's own table is fresher
			}
			ep, ok := groupEndpoint(rd, qd.BrokerName, rt.endpoint)
			if !ok {
				continue
			}
			out.Brokers = append(out.Brokers, RouteBroker{Name: qd.BrokerName, Endpoint: ep, Self: qd.BrokerName == self,
				Replicas: groupReplicas(rd, qd.BrokerName, ep), ReadQueues: qd.ReadQueueNums, WriteQueues: qd.WriteQueueNums, Perm: qd.Perm})
		}
	}
	slices.SortFunc(out.Brokers, func(x, y RouteBroker) int { return cmp.Compare(x.Name, y.Name) })
	out.Brokers = slices.CompactFunc(out.Brokers, func(x, y RouteBroker) bool { return x.Name == y.Name })
	if len(out.Brokers) == 0 {
		if known {
			return nil, Errorf(TopicNotFound, "topic %s: no broker group serving it has a master now", topic)
		}
		return nil, Errorf(TopicNotFound, "topic %s does not exist", topic)
	}
	return out, nil
}

// groupEndpoint is the gRPC endpoint of the master of group name in rd,
// and false when the group has no master now.
func groupEndpoint(rd *namesrv.TopicRouteData, name, own string) (string, bool) {
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName != name {
			continue
		}
		addr, ok := bd.BrokerAddrs[0]
		if !ok || addr == "" {
			return "", false
		}
		if ep := bd.GRPCEndpoints[0]; ep != "" {
			return ep, true
		}
		host, _, err := net.SplitHostPort(addr)
		_, port, perr := net.SplitHostPort(own)
		if err != nil || perr != nil {
			return "", false
		}
		return net.JoinHostPort(host, port), true
	}
	return "", false
}

// groupReplicas is the gRPC endpoints of the members of group name in rd
// other than its master (master, its endpoint, is left out wherever it
// is listed), by broker id; nil for a group of one or without rd.
func groupReplicas(rd *namesrv.TopicRouteData, name, master string) []string {
	if rd == nil {
		return nil
	}
	var out []string
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName != name {
			continue
		}
		ids := slices.Sorted(maps.Keys(bd.GRPCEndpoints))
		for _, id := range ids {
			if ep := bd.GRPCEndpoints[id]; id != 0 && ep != "" && ep != master && bd.BrokerAddrs[id] != "" {
				out = append(out, ep)
			}
		}
	}
	return out
}

// topicWait is Topic for a goroutine that may wait (within ctx).
func (b *Broker) topicWait(ctx context.Context, c Caller, topic string, create bool) (meta.TopicConfig, error) {
	type answer struct {
		cfg meta.TopicConfig
		err error
	}
	ch := make(chan answer, 1)
	b.Topic(c, topic, create, func(cfg meta.TopicConfig, err error) { ch <- answer{cfg, err} })
	select {
	case a := <-ch:
		return a.cfg, a.err
	case <-ctx.Done():
		return meta.TopicConfig{}, Wrap(Unavailable, "topic "+topic, ctx.Err())
	}
}

// TopicWait is Topic for a front door whose calls run on goroutines of
// their own (gRPC): it waits for the answer within ctx.
func (b *Broker) TopicWait(ctx context.Context, c Caller, topic string, create bool) (meta.TopicConfig, error) {
	return b.topicWait(ctx, c, topic, create)
}

// NotMaster refuses a call that only a master serves (a send, a receive)
// on a replica, before anything is counted, naming the master's remoting
// address when the role knows it; nil on a master or a standalone broker.
// Over gRPC clients read routes that point at the master (Route), so a
// refused client goes there at its next route refresh.
func (b *Broker) NotMaster() *Error {
	st := b.p.Role().Get()
	if st.IsMaster() {
		return nil
	}
	if st.MasterAddr == "" {
		return Errorf(NotMaster, "broker %s is a replica and its group has no master now: retry later", b.cfg.BrokerName)
	}
	return Errorf(NotMaster, "broker %s is a replica (id %s): its master is %s; ask this endpoint for the route again",
		b.cfg.BrokerName, strconv.FormatInt(st.BrokerID, 10), st.MasterAddr)
}
