package broker

// Clients and group progress for the operator: who is connected through
// every front door (remoting clients and gRPC sessions alike register
// with the clients stage), and how far each consumer group is behind,
// POP deliveries in flight counted apart.

import (
	"maps"
	"slices"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pop"
)

// ClientInfo is one registered client, with the front door it came
// through.
type ClientInfo struct {
	clients.ClientInfo
	// Protocol is Remoting or GRPC.
	Protocol Protocol
}

// IsSessionConnID tells a gRPC session's clients.Conn id (NewConnID) from
// a socket's.
func IsSessionConnID(id uint64) bool { return id&(1<<62) != 0 }

// Clients answers every registered client whose groups the caller may
// see: a client is listed with the producer and consumer groups its
// account has SUB on (all of them for an admin, or without ACL), and left
// out when none. done runs on the clients stage's goroutine.
func (b *Broker) Clients(c Caller, done func([]ClientInfo, *Error)) {
	b.clients.st.Send(&clients.ListClients{FailFunc: failed("list clients", func(e *Error) { done(nil, e) }),
		Reply: func(all []clients.ClientInfo) {
			may := func(g string) bool { return b.authorize(c, Need{Kind: KindGroup, Name: g, Perm: Sub}) == nil }
			out := make([]ClientInfo, 0, len(all))
			for _, ci := range all {
				ci.ProducerGroups = slices.DeleteFunc(ci.ProducerGroups, func(g string) bool { return !may(g) })
				ci.Consumers = slices.DeleteFunc(ci.Consumers, func(cd clients.ConsumerInfo) bool { return !may(cd.Group) })
				if len(ci.ProducerGroups) == 0 && len(ci.Consumers) == 0 {
					continue
				}
				p := Remoting
				if IsSessionConnID(ci.ConnID) {
					p = GRPC
				}
				out = append(out, ClientInfo{ClientInfo: ci, Protocol: p})
			}
			done(out, nil)
		}})
}

// GroupProgress is a consumer group's progress on every queue it has
// committed offsets for or its online members subscribe to.
type GroupProgress struct {
	Group  string
	Queues []QueueLag // by topic, then queue
}

// QueueLag is one queue's progress of a group.
type QueueLag struct {
	Topic   string
	QueueID int32
	// Max is the queue's next offset; Consumed the group's committed
	// offset, or for a POP group its POP position when further (-1: none,
	// counted from 0 as RocketMQ's consume stats do); Lag is Max minus
	// Consumed.
	Max, Consumed, Lag int64
	// InFlight are POP deliveries not acked yet and Retrying those whose
	// invisibility ran out, waiting to be offered again: both are within
	// Lag (a POP group's offset moves once every message below is acked).
	InFlight, Retrying int
}

// GroupProgress answers group's progress (SUB on the group). done runs on
// a stage's goroutine.
func (b *Broker) GroupProgress(c Caller, group string, done func(*GroupProgress, *Error)) {
	if err := b.authorize(c, Need{Kind: KindGroup, Name: group, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	st, err := b.stageFor(offsets.StageName)
	if err != nil {
		done(nil, err)
		return
	}
	st.Send(&offsets.GroupOffsets{Group: group, FailFunc: failed("group offsets", func(e *Error) { done(nil, e) }),
		Reply: func(offs map[string]map[int32]int64) {
			popSt, perr := b.stageFor(pop.StageName)
			if perr != nil {
				done(b.progress(group, offs, nil), nil)
				return
			}
			popSt.Send(&pop.InFlight{Group: group, FailFunc: func(error) { done(b.progress(group, offs, nil), nil) },
				Reply: func(fl map[pop.QueueKey]pop.QueueInFlight) { done(b.progress(group, offs, fl), nil) }})
		}})
}

// progress puts a group's offsets, the queues' ends and its POP
// deliveries together.
func (b *Broker) progress(group string, offs map[string]map[int32]int64, fl map[pop.QueueKey]pop.QueueInFlight) *GroupProgress {
	topics := map[string]bool{}
	for t := range offs {
		topics[t] = true
	}
	for _, t := range b.p.Subscriptions().Topics(group) {
		topics[t] = true
	}
	for k := range fl {
		topics[k.Topic] = true
	}
	gp := &GroupProgress{Group: group}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		cfg, ok := b.p.Topics().Get(t)
		if !ok {
			continue
		}
		for q := range max(cfg.WriteQueueNums, cfg.ReadQueueNums) {
			qp := QueueLag{Topic: t, QueueID: q, Consumed: -1}
			if cq := b.p.Store().Queues.Lookup(t, q); cq != nil {
				qp.Max = cq.MaxOffset()
			}
			if off, ok := offs[t][q]; ok {
				qp.Consumed = off
			}
			f, popped := fl[pop.QueueKey{Topic: t, QueueID: q}]
			if popped && f.Committed > qp.Consumed {
				// The POP position, before its commit reached the offsets
				// stage (a group's first pops start at the queue's end).
				qp.Consumed = f.Committed
			}
			qp.Lag = max(qp.Max-max(qp.Consumed, 0), 0)
			qp.InFlight, qp.Retrying = f.InFlight, f.Retrying
			gp.Queues = append(gp.Queues, qp)
		}
	}
	return gp
}
