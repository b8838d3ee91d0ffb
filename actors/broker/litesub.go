package broker

// Lite subscriptions (RocketMQ 5.5's SyncLiteSubscription; docs/lite.md):
// each LitePushConsumer (a client of a group, bound to a LITE topic)
// subscribes to a set of lite topics; its receives deliver only their
// messages. The set is the broker's, per client, in memory (the client
// sends it whole every 30 s: COMPLETE_ADD).

import (
	"errors"
	"slices"
	"strconv"

	"github.com/wheelmq/wheelmq/storage/message"
)

// DefaultMaxLiteSubscriptions bounds one client's lite subscriptions when
// the configuration does not (the Java and Go SDKs' default
// liteSubscriptionQuota).
const DefaultMaxLiteSubscriptions = 2000

// ErrLiteQuota marks a refusal for a client's lite subscription quota.
var ErrLiteQuota = errors.New("lite subscription quota exceeded")

// LiteAction is a SyncLiteSubscription action.
type LiteAction int

// The actions (the v5 protocol's LiteSubscriptionAction).
const (
	LitePartialAdd LiteAction = iota
	LitePartialRemove
	LiteCompleteAdd
	LiteCompleteRemove
)

// LiteSubscription is one SyncLiteSubscription.
type LiteSubscription struct {
	Action       LiteAction
	Topic, Group string // the bind (parent) topic and the group
	Client       string // the client id
	Lites        []string
}

// MaxLiteSubscriptions is the per-client quota in force.
func (b *Broker) MaxLiteSubscriptions() int {
	if n := b.cfg.MaxLiteSubscriptions; n > 0 {
		return n
	}
	return DefaultMaxLiteSubscriptions
}

// SyncLiteSubscription changes a client's lite subscriptions. The bind
// topic must be a LITE topic (BadRequest otherwise), each lite topic name
// valid (IllegalMessage); a PARTIAL_ADD past the quota is refused
// (ErrLiteQuota) and changes nothing; a COMPLETE_ADD past it keeps the
// first names in order and drops the rest, telling the client of each
// (the notifier).
func (b *Broker) SyncLiteSubscription(c Caller, r *LiteSubscription) *Error {
	if err := b.authorize(c, consumeNeeds(r.Group, r.Topic)...); err != nil {
		return err
	}
	cfg, ok := b.p.Topics().Get(r.Topic)
	if !ok {
		return Errorf(TopicNotFound, "topic[%s] not exist, apply first please!", r.Topic)
	}
	if !LiteTopic(cfg) {
		return Errorf(BadRequest, "topic %s is not a LITE topic (message.type=%s)", r.Topic, typeName(cfg))
	}
	if r.Group == "" || r.Client == "" {
		return Errorf(BadRequest, "a lite subscription needs a group and a client id")
	}
	for _, l := range r.Lites {
		if err := message.ValidateLiteTopic(l); err != nil {
			return &Error{Status: IllegalMessage, Remark: err.Error(), Err: err}
		}
	}
	quota := b.MaxLiteSubscriptions()
	s := &b.lite
	ck := liteClientKey{r.Group, r.Client}
	var dropped []string
	s.mu.Lock()
	if !s.open {
		s.mu.Unlock()
		return Errorf(Unavailable, "lite topics are not served")
	}
	cl := s.clients[ck]
	if cl == nil || cl.parent != r.Topic {
		if cl != nil {
			s.unsubscribeAllLocked(ck, cl)
		}
		cl = &liteClient{parent: r.Topic, topics: map[string]struct{}{}, kick: make(chan struct{}, 1)}
		s.clients[ck] = cl
	}
	switch r.Action {
	case LitePartialAdd:
		added := 0
		for _, l := range r.Lites {
			if _, ok := cl.topics[l]; !ok {
				added++
			}
		}
		if len(cl.topics)+added > quota {
			s.mu.Unlock()
			return &Error{Status: BadRequest, Err: ErrLiteQuota,
				Remark: "lite subscription quota exceeded: a client subscribes to at most " + strconv.Itoa(quota) + " lite topics"}
		}
		for _, l := range r.Lites {
			s.subscribeLocked(ck, cl, l)
		}
	case LitePartialRemove:
		for _, l := range r.Lites {
			s.unsubscribeLocked(ck, cl, l)
		}
	case LiteCompleteAdd:
		want := map[string]struct{}{}
		for _, l := range r.Lites {
			if len(want) >= quota {
				dropped = append(dropped, l)
				continue
			}
			want[l] = struct{}{}
		}
		for l := range cl.topics {
			if _, ok := want[l]; !ok {
				s.unsubscribeLocked(ck, cl, l)
			}
		}
		for l := range want {
			s.subscribeLocked(ck, cl, l)
		}
	case LiteCompleteRemove:
		s.unsubscribeAllLocked(ck, cl)
	default:
		s.mu.Unlock()
		return Errorf(BadRequest, "unknown lite subscription action %d", r.Action)
	}
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		for _, l := range dropped {
			notify(r.Group, r.Client, r.Topic, l)
		}
	}
	return nil
}

// LiteSubscriptions lists a client's lite topics, sorted.
func (b *Broker) LiteSubscriptions(group, client string) []string {
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := s.clients[liteClientKey{group, client}]
	if cl == nil {
		return nil
	}
	out := make([]string, 0, len(cl.topics))
	for l := range cl.topics {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// LiteClientGone forgets a client's lite subscriptions (its session
// ended).
func (b *Broker) LiteClientGone(group, client string) {
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	ck := liteClientKey{group, client}
	if cl := s.clients[ck]; cl != nil {
		s.unsubscribeAllLocked(ck, cl)
		delete(s.clients, ck)
	}
}

func (s *liteState) subscribeLocked(ck liteClientKey, cl *liteClient, lite string) {
	k := liteKey{cl.parent, lite}
	cl.topics[lite] = struct{}{}
	m := s.subs[k]
	if m == nil {
		m = map[liteClientKey]struct{}{}
		s.subs[k] = m
	}
	m[ck] = struct{}{}
	if s.evictedLocked(k) {
		s.wantLocked(k) // back in memory first (liteevict.go)
	}
	select {
	case cl.kick <- struct{}{}:
	default:
	}
}

func (s *liteState) unsubscribeLocked(ck liteClientKey, cl *liteClient, lite string) {
	k := liteKey{cl.parent, lite}
	delete(cl.topics, lite)
	if m := s.subs[k]; m != nil {
		delete(m, ck)
		if len(m) == 0 {
			delete(s.subs, k)
		}
	}
	if q := s.queues[k]; q != nil && len(q.msgs) == 0 && len(s.subs[k]) == 0 {
		s.dropLocked(q) // empty and unsubscribed: out of memory until its next message
	}
}

func (s *liteState) unsubscribeAllLocked(ck liteClientKey, cl *liteClient) {
	for l := range cl.topics {
		s.unsubscribeLocked(ck, cl, l)
	}
}

// LiteStats counts the lite state: lite topics in memory (resident), the
// messages they hold, messages in flight, clients with lite subscriptions
// and subscriptions; lite topics evicted to the spill store, and the
// evictions and reloads since the start (liteevict.go).
type LiteStats struct {
	Topics, Messages, InFlight, Clients, Subscriptions int
	Evicted                                            int
	Evictions, Reloads                                 int64
}

// LiteStats counts the lite state now.
func (b *Broker) LiteStats() LiteStats {
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	st := LiteStats{Topics: len(s.queues), InFlight: s.flights, Clients: len(s.clients), Evicted: len(s.evicted),
		Evictions: s.evictions.Load(), Reloads: s.reload.Load()}
	for _, q := range s.queues {
		st.Messages += len(q.msgs)
	}
	for _, c := range s.clients {
		st.Subscriptions += len(c.topics)
	}
	return st
}

// LiteHeld counts the messages (parent, lite) holds in memory for
// delivery (0 when it does not exist or is evicted: liteevict.go).
func (b *Broker) LiteHeld(parent, lite string) int {
	s := &b.lite
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[liteKey{parent, lite}]; q != nil {
		return len(q.msgs)
	}
	return 0
}
