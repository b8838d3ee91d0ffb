package grpcgw

// Sessions: one per gRPC client id. A session is the client's
// clients.Conn: its heartbeats register it with the broker in process
// (broker.Heartbeat), so the broker's requests for that client
// (transaction checks) come to the session, which sends them down the
// client's Telemetry stream. The session's internal remoting connection
// serves the RPCs not yet called in process (receives, acks, offsets).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/storage/message"
)

// sessions is the registry of live sessions by client id.
type sessions struct {
	mu     sync.Mutex
	m      map[string]*session
	closed bool
}

// session is one gRPC client's state.
type session struct {
	id       string
	g        *Gateway
	creds    auth.Credentials
	connID   uint64 // the session's id as a clients.Conn
	language string

	remote atomic.Pointer[netip.AddrPort] // the client's address, as its latest call came from

	mu         sync.Mutex
	clientType v2.ClientType
	settings   *v2.Settings        // the merged settings last answered (nil: none yet)
	topics     map[string]struct{} // published topics: producer group = topic
	group      string              // consumer group ("": none)
	subs       []*v2.SubscriptionEntry
	tele       *teleStream // the newest open Telemetry stream (nil: none)
	streams    int         // open Telemetry streams
	lastSeen   time.Time
	ended      bool
	renew      *renewer // auto-renewed receipt handles (push consumers)
}

// teleStream serializes sends on one Telemetry stream.
type teleStream struct {
	mu sync.Mutex
	s  v2.MessagingService_TelemetryServer
}

// send writes one command.
func (t *teleStream) send(c *v2.TelemetryCommand) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s.Send(c)
}

// session returns ctx's session, creating it, or the status refusing the
// call (no client id, failed authentication).
func (g *Gateway) session(ctx context.Context) (*session, *v2.Status) {
	c, err := g.verify.callerOf(ctx)
	if err != nil {
		return nil, statusf(v2.Code_UNAUTHORIZED, "%v", err)
	}
	if c.clientID == "" {
		return nil, statusf(v2.Code_CLIENT_ID_REQUIRED, "header %s is required", headerClientID)
	}
	s, err := g.sess.get(g, c)
	if err != nil {
		return nil, statusf(v2.Code_INTERNAL_SERVER_ERROR, "%v", err)
	}
	if a := peerAddr(ctx); a.IsValid() {
		s.remote.Store(&a)
	}
	return s, nil
}

// get returns the session of c's client id, creating it.
func (r *sessions) get(g *Gateway, c caller) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the gateway is stopping")
	}
	s := r.m[c.clientID]
	if s == nil {
		s = &session{id: c.clientID, g: g, creds: c.creds, connID: broker.NewConnID(), language: c.language,
			topics: map[string]struct{}{}, lastSeen: time.Now()}
		s.renew = newRenewer(s)
		r.m[c.clientID] = s
		g.m.sessions.Inc()
		g.log.Debug().Str("client_id", c.clientID).Str("language", c.language).Msg("grpc session opened")
	} else if !c.creds.IsZero() && c.creds.AccessKey != s.creds.AccessKey {
		return nil, fmt.Errorf("client id %s is in use by another account", quote(c.clientID))
	}
	s.touch()
	return s, nil
}

// remove drops s from the registry (false when it was not there).
func (r *sessions) remove(s *session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[s.id] != s {
		return false
	}
	delete(r.m, s.id)
	s.g.m.sessions.Dec()
	return true
}

// idle returns the sessions with no Telemetry stream and no call since
// now-idle.
func (r *sessions) idle(now time.Time, idle time.Duration) []*session {
	r.mu.Lock()
	all := slices.Collect(maps.Values(r.m))
	r.mu.Unlock()
	var out []*session
	for _, s := range all {
		s.mu.Lock()
		if s.streams == 0 && now.Sub(s.lastSeen) > idle {
			out = append(out, s)
		}
		s.mu.Unlock()
	}
	return out
}

// closeAll ends every session (Stop) and refuses new ones.
func (r *sessions) closeAll() {
	r.mu.Lock()
	r.closed = true
	all := slices.Collect(maps.Values(r.m))
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, s := range all {
		s.end(ctx, false)
	}
}

// touch records activity.
func (s *session) touch() {
	s.mu.Lock()
	s.lastSeen = time.Now()
	s.mu.Unlock()
}

// heartbeatData is what registers the client (false: nothing to
// register yet).
func (s *session) heartbeatData() (clients.HeartbeatData, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hb := clients.HeartbeatData{ClientID: s.id}
	for _, t := range slices.Sorted(maps.Keys(s.topics)) {
		hb.ProducerDataSet = append(hb.ProducerDataSet, clients.ProducerData{GroupName: t})
	}
	if s.group != "" {
		cd := clients.ConsumerData{GroupName: s.group, ConsumeType: "CONSUME_POP", MessageModel: "CLUSTERING",
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET"}
		for _, e := range s.subs {
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, subscriptionData(e))
		}
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
	}
	if len(hb.ProducerDataSet) == 0 && len(hb.ConsumerDataSet) == 0 {
		return hb, false
	}
	return hb, true
}

// subscriptionData is a gRPC subscription as a remoting one.
func subscriptionData(e *v2.SubscriptionEntry) clients.SubscriptionData {
	expr, typ := filterOf(e.GetExpression())
	sd := clients.SubscriptionData{Topic: e.GetTopic().GetName(), SubString: expr, ExpressionType: typ,
		SubVersion: time.Now().UnixMilli(), TagsSet: []string{}, CodeSet: []string{}}
	if typ == "TAG" && expr != "*" {
		for _, tag := range splitTags(expr) {
			sd.TagsSet = append(sd.TagsSet, tag)
			sd.CodeSet = append(sd.CodeSet, fmt.Sprint(message.TagsHashCode(tag)))
		}
	}
	return sd
}

// heartbeat registers the client with the broker, in process, with the
// session as its connection (nothing when it has neither topics nor a
// group yet).
func (s *session) heartbeat(ctx context.Context) error {
	hb, ok := s.heartbeatData()
	if !ok || s.g.opts.Broker == nil {
		return nil
	}
	c := s.caller()
	answer := make(chan *broker.Error, 1)
	s.g.opts.Broker.Heartbeat(c, &broker.HeartbeatRequest{Conn: s, Data: hb, Language: s.language},
		func(err *broker.Error) { answer <- err })
	select {
	case err := <-answer:
		if err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("heartbeat: %w", ctx.Err())
	}
}

// caller is the broker API's caller of the session's own calls.
func (s *session) caller() broker.Caller {
	return broker.Caller{Protocol: broker.GRPC, Account: s.creds.AccessKey, Remote: s.remoteAddr(), ClientID: s.id}
}

// remoteAddr is the client's address as its latest call came from.
func (s *session) remoteAddr() netip.AddrPort {
	if a := s.remote.Load(); a != nil {
		return *a
	}
	return netip.AddrPort{}
}

// ID implements clients.Conn: the session's connection id.
func (s *session) ID() uint64 { return s.connID }

// RemoteAddr implements clients.Conn: the client's address.
func (s *session) RemoteAddr() string { return s.remoteAddr().String() }

// Send implements clients.Conn: a request of the broker for the client
// (a transaction check goes down its Telemetry stream; others are not
// served to a gRPC client, and dropped).
func (s *session) Send(r clients.Request) error {
	if check, ok := r.Push.(clients.CheckTransaction); ok {
		s.relayCheck(check)
		return nil
	}
	s.g.log.Debug().Str("client_id", s.id).Int32("code", r.Push.Code()).Msg("broker request for a gRPC client: not served")
	return nil
}

// register adds published topics (producer groups) and the consumer group
// from a client's settings or heartbeat; it reports whether anything new
// was registered.
func (s *session) register(typ v2.ClientType, topics []string, group string, subs []*v2.SubscriptionEntry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	if typ != v2.ClientType_CLIENT_TYPE_UNSPECIFIED {
		s.clientType = typ
	}
	for _, t := range topics {
		if _, ok := s.topics[t]; !ok && t != "" {
			s.topics[t] = struct{}{}
			changed = true
		}
	}
	if group != "" && (group != s.group || subs != nil) {
		s.group = group
		if subs != nil {
			s.subs = subs
		}
		changed = true
	}
	return changed
}

// relayCheck sends a transaction check to the client's Telemetry stream
// as a recover_orphaned_transaction_command.
func (s *session) relayCheck(req clients.CheckTransaction) {
	log := s.g.log.With().Str("client_id", s.id).Str("msg_id", req.MsgID).Logger()
	rec, _, err := message.Decode(req.Message)
	if err != nil {
		log.Warn().Err(err).Msg("transaction check with an undecodable message: dropped")
		return
	}
	s.mu.Lock()
	t := s.tele
	s.mu.Unlock()
	if t == nil {
		log.Debug().Msg("transaction check for a client with no Telemetry stream: dropped (the broker asks again)")
		return
	}
	msg := toMessage(&rec, s.g.opts.BrokerName, s.g.adv)
	if id := req.MsgID; id != "" {
		msg.SystemProperties.MessageId = id
	}
	txID := encodeTxID(req.OffsetMsgID, strconv.FormatInt(req.TranStateTableOffset, 10))
	err = t.send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &v2.RecoverOrphanedTransactionCommand{Message: msg, TransactionId: txID}}})
	if err != nil {
		log.Debug().Err(err).Msg("transaction check not delivered to the Telemetry stream")
		return
	}
	s.g.m.checks.Inc()
}

// end closes the session: with notify, the client said goodbye and is
// unregistered from the broker first; held auto-renew handles are made
// visible again within about a second either way.
func (s *session) end(ctx context.Context, notify bool) {
	if !s.g.sess.remove(s) {
		return
	}
	s.renew.release(ctx)
	s.mu.Lock()
	topics := slices.Sorted(maps.Keys(s.topics))
	group := s.group
	s.mu.Unlock()
	if core := s.g.opts.Broker; core != nil {
		if group != "" {
			core.LiteClientGone(group, s.id)
		}
		s.unregister(ctx, notify, topics, group)
		core.ConnClosed(s.connID)
	}
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.g.log.Debug().Str("client_id", s.id).Bool("notified", notify).Msg("grpc session closed")
}

// unregister takes the client out of its groups when it said goodbye
// (notify).
func (s *session) unregister(ctx context.Context, notify bool, topics []string, group string) {
	if notify {
		unreg := func(pg, cg string) {
			done := make(chan *broker.Error, 1)
			s.g.opts.Broker.Unregister(s.caller(), &broker.UnregisterRequest{ClientID: s.id, ProducerGroup: pg, ConsumerGroup: cg},
				func(err *broker.Error) { done <- err })
			select {
			case err := <-done:
				if err != nil {
					s.g.log.Debug().Err(err).Str("client_id", s.id).Msg("unregister client")
				}
			case <-ctx.Done():
			}
		}
		for _, t := range topics {
			unreg(t, "")
		}
		if group != "" {
			unreg("", group)
		}
	}
}
