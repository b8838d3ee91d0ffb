// Package clients is the client-manager stage: the single owner of which
// clients are connected, which consumer groups they belong to and what they
// subscribe to.
//
// It serves HEART_BEAT (register), UNREGISTER_CLIENT,
// GET_CONSUMER_LIST_BY_GROUP and the admin connection lists
// (GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST;
// connections.go), drops clients whose connection closed or that sent no
// heartbeat for ExpireAfter (120 s), and sends NOTIFY_CONSUMER_IDS_CHANGED
// to every member of a group whose membership changed so that they
// rebalance at once (unless the group's notifyConsumerIdsChangedEnable is
// off). It publishes the subscriptions and each group's message model as an
// immutable snapshot that the pull path reads without messaging the stage.
//
// It also owns the orderly-consumption queue locks (LOCK_BATCH_MQ,
// UNLOCK_BATCH_MQ; locks.go), released when their client goes away, and it
// is the broker's way to its clients: SendToProducer hands a request
// (CHECK_TRANSACTION_STATE) to a live connection of a producer group
// (producers.go), and Invoke sends a request to one consumer and relays its
// answer (GET_CONSUMER_RUNNING_INFO; invoke.go), CallProducer does the same
// with a producer (PUSH_REPLY_MESSAGE_TO_CLIENT), and NotifyGroup tells
// every member of a group (RESET_CONSUMER_CLIENT_OFFSET).
package clients

import (
	"encoding/json"
	"sort"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
)

// StageName is the stage's stable name.
const StageName = "clients"

// maxRequesters bounds the request/reply requesters remembered by
// connection (Requester); past it only those already known are updated.
const maxRequesters = 65536

// Conn is the connection a client talks on: the remoting codec's
// connection (netloop/router) or a gRPC session (netloop/grpcgw), each
// writing the stage's requests (push.go) in its protocol.
type Conn interface {
	// ID identifies the connection (Closed names it).
	ID() uint64
	// RemoteAddr is the client's address.
	RemoteAddr() string
	// Send writes a request of the broker to the client; an error means
	// it was not written.
	Send(Request) error
}

// Heartbeat registers a client's groups and subscriptions.
type Heartbeat struct {
	Conn Conn
	Data HeartbeatData
	// Language and Version are the client's, from the request header.
	Language string
	Version  int32
	// Done is called once the heartbeat is applied.
	Done func()
	stage.FailFunc
}

// Unregister removes a client from the named groups ("" = none).
type Unregister struct {
	ClientID      string
	ProducerGroup string
	ConsumerGroup string
	Done          func()
	stage.FailFunc
}

// Closed reports a closed connection.
type Closed struct{ ConnID uint64 }

// ListConsumers answers GET_CONSUMER_LIST_BY_GROUP.
type ListConsumers struct {
	Group string
	Reply func(ids []string)
	stage.FailFunc
}

type expireTick struct{}

// SubKey names a group's subscription to a topic.
type SubKey struct{ Group, Topic string }

// Subscription is what a group subscribes a topic with.
type Subscription struct {
	Expression string
	Type       string // expressionType: "TAG" (or empty) or "SQL92"
	Version    int64  // subVersion
}

// snapshot is what the stage publishes.
type snapshot struct {
	subs   map[SubKey]Subscription // group+topic -> subscription
	topics map[string][]string     // group -> subscribed topics, sorted
	models map[string]string       // group -> message model
	online map[string]int          // group -> online consumer clients
}

// View publishes the subscriptions; safe from any goroutine.
type View struct{ p atomic.Pointer[snapshot] }

// Lookup returns the subscription expression of group for topic.
func (v *View) Lookup(group, topic string) (string, bool) {
	s := v.p.Load()
	if s == nil {
		return "", false
	}
	e, ok := s.subs[SubKey{group, topic}]
	return e.Expression, ok
}

// LookupSubscription returns the subscription of group for topic.
func (v *View) LookupSubscription(group, topic string) (Subscription, bool) {
	s := v.p.Load()
	if s == nil {
		return Subscription{}, false
	}
	e, ok := s.subs[SubKey{group, topic}]
	return e, ok
}

// Topics returns the topics the online members of group subscribe to (nil
// when none is online). The slice is shared: do not modify it.
func (v *View) Topics(group string) []string {
	if s := v.p.Load(); s != nil {
		return s.topics[group]
	}
	return nil
}

// GroupsOf returns the consumer groups whose online members subscribe to
// topic, sorted (QUERY_TOPIC_CONSUME_BY_WHO).
func (v *View) GroupsOf(topic string) []string {
	s := v.p.Load()
	if s == nil {
		return nil
	}
	var out []string
	for k := range s.subs {
		if k.Topic == topic {
			out = append(out, k.Group)
		}
	}
	sort.Strings(out)
	return out
}

// MessageModel returns the message model (CLUSTERING or BROADCASTING) of
// an online consumer group, "" when none of its members is online.
func (v *View) MessageModel(group string) string {
	if s := v.p.Load(); s != nil {
		return s.models[group]
	}
	return ""
}

// Online returns how many clients of consumer group are online (sent a
// heartbeat naming it and have not expired).
func (v *View) Online(group string) int {
	if s := v.p.Load(); s != nil {
		return s.online[group]
	}
	return 0
}

// Models returns every online consumer group's message model (CLUSTERING
// or BROADCASTING, from its members' heartbeats). The map is shared: do
// not modify it.
func (v *View) Models() map[string]string {
	if s := v.p.Load(); s != nil {
		return s.models
	}
	return nil
}

// Options configures the stage.
type Options struct {
	View        *View
	ExpireAfter time.Duration // default 120 s
	// LockExpiry is how long an orderly queue lock lives without renewal
	// (default 60 s, RocketMQ's rocketmq.broker.rebalance.lockMaxLiveTime).
	LockExpiry time.Duration
	// Now is the clock of the lock table (default time.Now; tests).
	Now func() time.Time
	// EnsureRetryTopic is called for each clustering consumer group seen.
	EnsureRetryTopic func(group string)
	// NotifyEnabled reports whether a group's members are told of
	// membership changes (nil: always).
	NotifyEnabled func(group string) bool
	Logger        zerolog.Logger
}

type client struct {
	id       string
	conn     Conn
	addr     string
	language string
	version  int32
	lastSeen time.Time
	groups   map[string]ConsumerData // consumer groups
	pgroups  map[string]struct{}     // producer groups
}

// isProducerOf reports whether the client registered producer group g.
func (c *client) isProducerOf(g string) bool {
	_, ok := c.pgroups[g]
	return ok
}

// Manager is the actor.
type Manager struct {
	opts    Options
	clients map[string]*client // by client id
	opaque  int32
	timer   *stage.Timer
	locks   lockTable
	// rr is the round-robin position per producer group (SendToProducer).
	rr    map[string]int
	calls *pendingCalls
	// requesters are the connections request/reply requesters sent a
	// request on, by client id (Requester).
	requesters map[string]*client
}

// Producer returns the actor producer. The stage starts empty after a
// restart: clients heartbeat every 30 s and are known again by then.
func Producer(opts Options) stage.Producer {
	if opts.ExpireAfter <= 0 {
		opts.ExpireAfter = 120 * time.Second
	}
	if opts.LockExpiry <= 0 {
		opts.LockExpiry = 60 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return func(self *stage.Stage) actor.Actor {
		return &Manager{opts: opts, timer: self.NewTimer(), calls: newPendingCalls(self)}
	}
}

// Receive implements actor.Actor.
func (m *Manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		m.clients = map[string]*client{}
		m.locks = lockTable{}
		m.rr = map[string]int{}
		m.requesters = map[string]*client{}
		m.publish()
		m.arm()
	case *Heartbeat:
		m.heartbeat(msg)
		if msg.Done != nil {
			msg.Done()
		}
	case *Unregister:
		m.unregister(msg)
		if msg.Done != nil {
			msg.Done()
		}
	case *Closed:
		var gone []string
		for id, c := range m.clients {
			if c.conn.ID() == msg.ConnID {
				gone = append(gone, id)
			}
		}
		m.releaseConn(msg.ConnID)
		m.remove(gone, "connection closed")
		for id, r := range m.requesters {
			if r.conn.ID() == msg.ConnID {
				delete(m.requesters, id)
			}
		}
		m.calls.dropConn(msg.ConnID)
	case *ListConsumers:
		msg.Reply(m.members(msg.Group))
	case *LockBatch:
		msg.Reply(m.lock(msg))
	case *UnlockBatch:
		m.unlock(msg)
		if msg.Done != nil {
			msg.Done()
		}
	case *ListLocks:
		msg.Reply(m.liveLocks(msg.Group))
	case *SendToProducer:
		m.sendToProducer(msg)
	case *ConsumerConnection:
		m.consumerConnection(msg)
	case *ProducerConnection:
		m.producerConnection(msg)
	case *AllProducers:
		m.allProducers(msg)
	case *ListClients:
		m.listClients(msg)
	case *SubscriptionOf:
		m.subscriptionOf(msg)
	case *Invoke:
		m.invoke(msg)
	case *CallProducer:
		m.callProducer(msg)
	case *Requester:
		if len(m.requesters) < maxRequesters || m.requesters[msg.ClientID] != nil {
			m.requesters[msg.ClientID] = &client{id: msg.ClientID, conn: msg.Conn}
		}
	case *NotifyGroup:
		m.notifyGroup(msg)
	case *Response:
		m.calls.answer(msg)
	case callTimeout:
		m.calls.expire(msg)
	case expireTick:
		now := time.Now()
		var gone []string
		for id, c := range m.clients {
			if now.Sub(c.lastSeen) > m.opts.ExpireAfter {
				gone = append(gone, id)
			}
		}
		m.remove(gone, "no heartbeat")
		m.pruneLocks()
		m.arm()
	case *actor.Stopping, *actor.Restarting:
		m.timer.Stop()
		m.calls.failAll(errStopped)
	}
}

// arm schedules the next expiry scan: every 10 s, or every ExpireAfter/2
// when that is shorter (so a client is dropped at most 1.5 x ExpireAfter
// after its last heartbeat).
func (m *Manager) arm() {
	every := max(min(10*time.Second, m.opts.ExpireAfter/2), time.Millisecond)
	m.timer.Arm(every, expireTick{})
}

func (m *Manager) heartbeat(h *Heartbeat) {
	c, ok := m.clients[h.Data.ClientID]
	if !ok {
		c = &client{id: h.Data.ClientID}
		m.clients[c.id] = c
		m.opts.Logger.Info().Str("client", c.id).Str("remote", h.Conn.RemoteAddr()).Msg("client registered")
	}
	c.conn = h.Conn
	c.addr, c.language, c.version = h.Conn.RemoteAddr(), h.Language, h.Version
	c.lastSeen = time.Now()
	old := c.groups
	c.groups = map[string]ConsumerData{}
	for _, cd := range h.Data.ConsumerDataSet {
		c.groups[cd.GroupName] = cd
		if cd.MessageModel != "BROADCASTING" && m.opts.EnsureRetryTopic != nil {
			m.opts.EnsureRetryTopic(cd.GroupName)
		}
	}
	c.pgroups = map[string]struct{}{}
	for _, pd := range h.Data.ProducerDataSet {
		c.pgroups[pd.GroupName] = struct{}{}
	}
	changed := map[string]bool{}
	for g := range c.groups {
		if _, was := old[g]; !was {
			changed[g] = true
		}
	}
	for g := range old {
		if _, is := c.groups[g]; !is {
			changed[g] = true
		}
	}
	m.publish()
	for g := range changed {
		m.notify(g)
	}
}

func (m *Manager) unregister(u *Unregister) {
	c, ok := m.clients[u.ClientID]
	if !ok {
		return
	}
	if u.ProducerGroup != "" {
		delete(c.pgroups, u.ProducerGroup)
	}
	if u.ConsumerGroup != "" {
		m.releaseLocks(u.ConsumerGroup, func(e *lockEntry) bool { return e.clientID == u.ClientID })
		if _, was := c.groups[u.ConsumerGroup]; was {
			delete(c.groups, u.ConsumerGroup)
			m.publish()
			m.notify(u.ConsumerGroup)
		}
	}
	if len(c.groups) == 0 && len(c.pgroups) == 0 {
		delete(m.clients, u.ClientID)
		m.releaseClient(u.ClientID)
		m.opts.Logger.Info().Str("client", u.ClientID).Msg("client unregistered")
	}
}

func (m *Manager) remove(ids []string, why string) {
	groups := map[string]bool{}
	for _, id := range ids {
		c := m.clients[id]
		for g := range c.groups {
			groups[g] = true
		}
		delete(m.clients, id)
		m.releaseClient(id)
		m.opts.Logger.Info().Str("client", id).Str("reason", why).Msg("client dropped")
	}
	if len(ids) > 0 {
		m.publish()
	}
	for g := range groups {
		m.notify(g)
	}
}

// members lists the client ids of a consumer group, sorted.
func (m *Manager) members(group string) []string {
	ids := []string{}
	for id, c := range m.clients {
		if _, ok := c.groups[group]; ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// notify sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every member.
func (m *Manager) notify(group string) {
	if m.opts.NotifyEnabled != nil && !m.opts.NotifyEnabled(group) {
		return
	}
	for _, id := range m.members(group) {
		c := m.clients[id]
		m.opaque++
		if err := c.conn.Send(Request{Opaque: m.opaque, Oneway: true, Push: ConsumerIDsChanged{Group: group}}); err != nil {
			m.opts.Logger.Debug().Err(err).Str("client", id).Str("group", group).Msg("notify consumer ids changed failed")
		}
	}
}

func (m *Manager) publish() {
	s := &snapshot{subs: map[SubKey]Subscription{}, topics: map[string][]string{}, models: map[string]string{}, online: map[string]int{}}
	for _, c := range m.clients {
		for g, cd := range c.groups {
			s.models[g] = cd.MessageModel
			s.online[g]++
			for _, sd := range cd.SubscriptionDataSet {
				k := SubKey{g, sd.Topic}
				old, seen := s.subs[k]
				if !seen {
					s.topics[g] = append(s.topics[g], sd.Topic)
				}
				// Like RocketMQ, the newest subscription version wins.
				if !seen || sd.SubVersion > old.Version {
					s.subs[k] = Subscription{Expression: sd.SubString, Type: sd.ExpressionType, Version: sd.SubVersion}
				}
			}
		}
	}
	for _, ts := range s.topics {
		sort.Strings(ts)
	}
	m.opts.View.p.Store(s)
}

// FormatConsumerList renders the GET_CONSUMER_LIST_BY_GROUP body.
func FormatConsumerList(ids []string) []byte {
	b, _ := json.Marshal(struct {
		IDs []string `json:"consumerIdList"`
	}{IDs: ids})
	return b
}
