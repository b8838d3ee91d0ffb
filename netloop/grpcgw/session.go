package grpcgw

// Sessions: one per gRPC client id, each with its internal remoting
// connection to the broker, which carries the client's heartbeats and so
// receives the broker's requests for that client (transaction checks).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
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
	id    string
	g     *Gateway
	creds auth.Credentials

	mu         sync.Mutex
	client     *remoting.Client
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
		s = &session{id: c.clientID, g: g, creds: c.creds, topics: map[string]struct{}{}, lastSeen: time.Now()}
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

// conn returns the session's connection to the broker, dialing it (and
// registering the client on it again) when there is none or it closed.
func (s *session) conn(ctx context.Context) (*remoting.Client, error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, errors.New("session ended")
	}
	if c := s.client; c != nil {
		select {
		case <-c.Done():
		default:
			s.mu.Unlock()
			return c, nil
		}
		_ = c.Close()
		s.client = nil
	}
	s.mu.Unlock()
	opts := remoting.ClientOptions{TLS: s.g.opts.BrokerTLS, OnRequest: s.onRequest,
		Logger: s.g.log.With().Str("client_id", s.id).Logger(), MaxFrame: s.g.opts.MaxMessageSize*32 + recvMargin}
	if !s.creds.IsZero() {
		opts.Sign = s.creds.Signer()
	}
	dctx, cancel := context.WithTimeout(ctx, s.g.opts.RequestTimeout)
	defer cancel()
	c, err := remoting.Dial(dctx, s.g.opts.BrokerAddr, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to the broker %s: %w", s.g.opts.BrokerAddr, err)
	}
	s.mu.Lock()
	if s.ended || s.client != nil {
		other := s.client
		ended := s.ended
		s.mu.Unlock()
		_ = c.Close()
		if ended {
			return nil, errors.New("session ended")
		}
		return other, nil
	}
	s.client = c
	s.mu.Unlock()
	if err := s.heartbeat(ctx); err != nil {
		s.g.log.Warn().Err(err).Str("client_id", s.id).Msg("heartbeat on a new internal connection failed")
	}
	return c, nil
}

// invoke sends one request over the session's connection.
func (s *session) invoke(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.InvokeWithin(ctx, req, s.g.opts.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("broker request %d: %w", req.Code, err)
	}
	return resp, nil
}

// heartbeatBody is the HEART_BEAT body registering what the client is
// (nil: nothing to register yet).
func (s *session) heartbeatBody() []byte {
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
		return nil
	}
	b, _ := json.Marshal(hb) // plain structs: cannot fail
	return b
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

// heartbeat registers the client with the broker (nothing when it has
// neither topics nor a group yet).
func (s *session) heartbeat(ctx context.Context) error {
	body := s.heartbeatBody()
	if body == nil {
		return nil
	}
	s.mu.Lock()
	c := s.client
	s.mu.Unlock()
	if c == nil {
		_, err := s.conn(ctx) // dials and heartbeats
		return err
	}
	resp, err := c.InvokeWithin(ctx, remoting.NewRequest(remoting.HeartBeat, nil, body), s.g.opts.RequestTimeout)
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("heartbeat: code %d %s", resp.Code, resp.Remark)
	}
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

// onRequest serves the broker's requests on the internal connection.
func (s *session) onRequest(req *remoting.Command) *remoting.Command {
	switch req.Code {
	case remoting.CheckTransactionState:
		s.relayCheck(req)
		return nil
	case remoting.NotifyConsumerIDsChanged:
		return nil
	}
	return remoting.NewResponse(req, remoting.RequestCodeNotSupported,
		fmt.Sprintf("request code %d is not supported by a gRPC client", req.Code))
}

// relayCheck sends a CHECK_TRANSACTION_STATE to the client's Telemetry
// stream as a recover_orphaned_transaction_command.
func (s *session) relayCheck(req *remoting.Command) {
	log := s.g.log.With().Str("client_id", s.id).Str("msg_id", req.Field("msgId")).Logger()
	rec, _, err := message.Decode(req.Body)
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
	if id := req.Field("msgId"); id != "" {
		msg.SystemProperties.MessageId = id
	}
	txID := encodeTxID(req.Field("offsetMsgId"), req.Field("tranStateTableOffset"))
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
	c := s.client
	topics := slices.Sorted(maps.Keys(s.topics))
	group := s.group
	s.mu.Unlock()
	if notify && c != nil {
		unreg := func(pg, cg string) {
			f := map[string]string{"clientID": s.id}
			if pg != "" {
				f["producerGroup"] = pg
			}
			if cg != "" {
				f["consumerGroup"] = cg
			}
			if _, err := c.InvokeWithin(ctx, remoting.NewRequest(remoting.UnregisterClient, f, nil), s.g.opts.RequestTimeout); err != nil {
				s.g.log.Debug().Err(err).Str("client_id", s.id).Msg("unregister client")
			}
		}
		for _, t := range topics {
			unreg(t, "")
		}
		if group != "" {
			unreg("", group)
		}
	}
	s.mu.Lock()
	s.ended = true
	c = s.client
	s.client = nil
	s.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	s.g.log.Debug().Str("client_id", s.id).Bool("notified", notify).Msg("grpc session closed")
}
