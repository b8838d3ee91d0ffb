package broker

// Heartbeat and Unregister: a client's registration with the clients stage
// (actors/clients), through whatever connection it has, a remoting one or
// a gRPC session (both are a clients.Conn: the stage reaches the client
// through it, e.g. with a transaction's check-back).
//
// A heartbeat's rules, as RocketMQ's ClientManageProcessor:
//   - under an ACL, SUB on each consumer group and each topic it
//     subscribes (producers: the account only), else Forbidden;
//   - a subscription expression that does not compile: the heartbeat is
//     registered all the same and answered BadFilter naming it;
//   - consumer groups without a configuration are created when
//     auto-creation of groups is on, else left out of the registration
//     (a consumer of an unknown group is not registered);
//   - a clustering group's %RETRY% topic is created (with the group's
//     retryQueueNums queues) and its route registered before the answer,
//     so that a client asking for its route right after finds it.

import (
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// HeartbeatRequest registers a client's groups and subscriptions.
type HeartbeatRequest struct {
	// Conn is how the clients stage reaches the client.
	Conn clients.Conn
	// Data is what the client is.
	Data clients.HeartbeatData
	// Language and Version are the client's.
	Language string
	Version  int32
}

// clientState is what the client calls share.
type clientState struct {
	st      *stage.Stage
	groups  *stage.Stage
	filters *pull.FilterCache
}

func (s *clientState) init(b *Broker) {
	s.st = b.p.Stage(clients.StageName)
	s.groups = b.p.Stage(groups.StageName)
	s.filters = pull.NewFilterCache(0)
}

// Heartbeat registers req's client; done runs once it is (on the clients
// stage's goroutine), with the heartbeat's refusal or nil.
func (b *Broker) Heartbeat(c Caller, req *HeartbeatRequest, done func(*Error)) {
	hb := req.Data
	var needs []Need
	for _, cd := range hb.ConsumerDataSet {
		needs = append(needs, Need{Kind: KindGroup, Name: cd.GroupName, Perm: Sub})
		for _, sd := range cd.SubscriptionDataSet {
			needs = append(needs, Need{Kind: KindTopic, Name: sd.Topic, Perm: Sub})
		}
	}
	if err := b.authorize(c, needs...); err != nil {
		done(err)
		return
	}
	var answer *Error
	for _, cd := range hb.ConsumerDataSet {
		for _, sd := range cd.SubscriptionDataSet {
			if _, err := b.clients.filters.Get(sd.ExpressionType, sd.SubString, sd.SubVersion); err != nil {
				answer = &Error{Status: BadFilter, Err: err, Remark: fmt.Sprintf("consumer group %s, topic %s: %s subscription %q does not compile: %v",
					cd.GroupName, sd.Topic, sd.ExpressionType, sd.SubString, err)}
			}
		}
	}
	missing := b.missingGroups(hb)
	if len(missing) > 0 && !b.p.Settings().AutoCreateGroup {
		hb = withoutGroups(hb, missing)
		b.log.Debug().Strs("groups", missing).Str("client", hb.ClientID).Str("protocol", c.Protocol.String()).
			Msg("heartbeat names unknown consumer groups and auto-creation is off: not registered")
		missing = nil
	}
	apply := func() { b.registerOnceRetryTopics(req, hb, answer, done) }
	if len(missing) == 0 {
		apply()
		return
	}
	b.clients.groups.Send(&groups.Ensure{Names: missing, Done: func(err error) {
		if err != nil {
			b.log.Warn().Err(err).Strs("groups", missing).Msg("create subscription groups at heartbeat failed")
		}
		apply()
	}})
}

// registerOnceRetryTopics registers the heartbeat once its groups' %RETRY%
// topics exist and are routed, then answers it.
func (b *Broker) registerOnceRetryTopics(req *HeartbeatRequest, hb clients.HeartbeatData, answer *Error, done func(*Error)) {
	apply := func() {
		b.clients.st.Send(&clients.Heartbeat{Conn: req.Conn, Data: hb, Language: req.Language, Version: req.Version,
			FailFunc: func(err error) { done(Wrap(Internal, "register client", err)) },
			Done:     func() { done(answer) }})
	}
	missing := b.missingRetryTopics(hb)
	if len(missing) == 0 {
		apply()
		return
	}
	var left atomic.Int32
	left.Store(int32(len(missing)))
	names := slices.Sorted(maps.Values(missing))
	for group, topic := range missing {
		queues := meta.DefaultRetryQueueNums
		if g, ok := b.p.Groups().Get(group); ok {
			queues = g.RetryQueueNums
		}
		b.p.EnsureGroupTopicQueues(topic, queues, func(err error) {
			if err != nil {
				b.log.Warn().Err(err).Str("topic", topic).Msg("create retry topic at heartbeat failed")
			}
			if left.Add(-1) == 0 {
				b.p.AwaitRoutes(names, apply)
			}
		})
	}
}

// missingGroups lists the heartbeat's consumer groups that have no
// subscription group configuration yet.
func (b *Broker) missingGroups(hb clients.HeartbeatData) []string {
	var out []string
	for _, cd := range hb.ConsumerDataSet {
		if _, ok := b.p.Groups().Get(cd.GroupName); !ok && cd.GroupName != "" && !slices.Contains(out, cd.GroupName) {
			out = append(out, cd.GroupName)
		}
	}
	return out
}

// withoutGroups returns hb without the consumer data of the named groups.
func withoutGroups(hb clients.HeartbeatData, names []string) clients.HeartbeatData {
	kept := make([]clients.ConsumerData, 0, len(hb.ConsumerDataSet))
	for _, cd := range hb.ConsumerDataSet {
		if !slices.Contains(names, cd.GroupName) {
			kept = append(kept, cd)
		}
	}
	hb.ConsumerDataSet = kept
	return hb
}

// missingRetryTopics maps the heartbeat's clustering consumer groups whose
// %RETRY% topic does not exist yet to that topic.
func (b *Broker) missingRetryTopics(hb clients.HeartbeatData) map[string]string {
	out := map[string]string{}
	for _, cd := range hb.ConsumerDataSet {
		if cd.MessageModel == "BROADCASTING" || cd.GroupName == "" {
			continue
		}
		topic := meta.RetryTopic(cd.GroupName)
		if _, ok := b.p.Topics().Get(topic); !ok {
			out[cd.GroupName] = topic
		}
	}
	return out
}

// UnregisterRequest removes a client from a producer group, a consumer
// group, or both ("": none).
type UnregisterRequest struct {
	ClientID      string
	ProducerGroup string
	ConsumerGroup string
}

// Unregister removes req's client from its groups; done runs once it is.
func (b *Broker) Unregister(c Caller, req *UnregisterRequest, done func(*Error)) {
	if req.ClientID == "" {
		done(Errorf(BadRequest, "the custom field <clientID> is null"))
		return
	}
	b.clients.st.Send(&clients.Unregister{ClientID: req.ClientID, ProducerGroup: req.ProducerGroup,
		ConsumerGroup: req.ConsumerGroup, FailFunc: func(err error) { done(Wrap(Internal, "unregister client", err)) },
		Done: func() { done(nil) }})
}

// ConnClosed tells the clients stage that a client's connection (a
// clients.Conn's ID) is gone: the clients registered through it are
// dropped.
func (b *Broker) ConnClosed(id uint64) { b.clients.st.Send(&clients.Closed{ConnID: id}) }

// sessionIDs numbers the clients.Conn of front doors without a socket of
// their own (gRPC sessions): above any connection id netloop gives.
var sessionIDs atomic.Uint64

// NewConnID returns a clients.Conn id for a front door's session, unique
// in the process and apart from netloop's connection ids.
func NewConnID() uint64 { return 1<<62 | sessionIDs.Add(1) }
