package grpcgw

// QueryRoute and QueryAssignment: a topic's queues on every broker of the
// cluster (broker.Route), and the topic and group configuration the other
// calls read, asked of the broker in process.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// groupInfo is what GET_SUBSCRIPTIONGROUP_CONFIG (352) answers, as far as
// settings need.
type groupInfo struct {
	ConsumeMessageOrderly bool             `json:"consumeMessageOrderly"`
	RetryMaxTimes         int32            `json:"retryMaxTimes"`
	Retry                 meta.RetryPolicy `json:"-"` // the group's retry policy
}

// topicAttrMessageType is the topic attribute naming its message type.
const topicAttrMessageType = "message.type"

// DefaultAcceptTypes is the accept_message_types of a topic's attributes,
// as RocketMQ's RouteActivity.parseTopicMessageType answers them: its
// message.type (MIXED: NORMAL, FIFO, DELAY, TRANSACTION), or, without one
// (RocketMQ reads none as NORMAL; wheelmq's untyped topics take every
// type, see meta.MessageType.Accepts), the four as MIXED.
func DefaultAcceptTypes(attrs map[string]string) []v2.MessageType {
	all := []v2.MessageType{v2.MessageType_NORMAL, v2.MessageType_FIFO, v2.MessageType_DELAY, v2.MessageType_TRANSACTION}
	switch attrs[topicAttrMessageType] {
	case "NORMAL":
		return []v2.MessageType{v2.MessageType_NORMAL}
	case "FIFO":
		return []v2.MessageType{v2.MessageType_FIFO}
	case "DELAY":
		return []v2.MessageType{v2.MessageType_DELAY}
	case "TRANSACTION":
		return []v2.MessageType{v2.MessageType_TRANSACTION}
	case "PRIORITY":
		return []v2.MessageType{v2.MessageType_PRIORITY}
	case "LITE":
		return []v2.MessageType{v2.MessageType_LITE}
	}
	return all
}

// topicStatus is the answer to a failed topic call.
func (g *Gateway) topicStatus(topic string, err error) *v2.Status {
	var be *broker.Error
	if !errors.As(err, &be) {
		return internalStatus(err)
	}
	st := fromBroker(be)
	if be.Status == broker.BadRequest {
		st.Code = v2.Code_ILLEGAL_TOPIC
	}
	if be.Status == broker.TopicNotFound && st.Message == "" {
		st.Message = fmt.Sprintf("topic %s does not exist", quote(topic))
	}
	return st
}

// groupConfig is group's configuration, read from the broker's published
// group table in process (RocketMQ's defaults when the broker does not
// know the group).
func (g *Gateway) groupConfig(ctx context.Context, s *session, group string) groupInfo {
	if g.opts.Broker == nil {
		return groupInfo{RetryMaxTimes: meta.DefaultRetryMaxTimes, Retry: meta.SubscriptionGroupConfig{}.RetryPolicy()}
	}
	gc, _ := g.opts.Broker.Group(g.callerOf(ctx, s), group)
	return groupInfo{ConsumeMessageOrderly: gc.ConsumeMessageOrderly, RetryMaxTimes: gc.RetryMaxTimes,
		Retry: gc.RetryPolicy()}
}

// endpointsOf is host:port as route endpoints.
func endpointsOf(addr string) *v2.Endpoints {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &v2.Endpoints{Scheme: v2.AddressScheme_DOMAIN_NAME, Addresses: []*v2.Address{{Host: addr}}}
	}
	p, _ := strconv.Atoi(port)
	scheme := v2.AddressScheme_DOMAIN_NAME
	if a, err := netip.ParseAddr(host); err == nil {
		scheme = v2.AddressScheme_IPv4
		if a.Is6() && !a.Is4In6() {
			scheme = v2.AddressScheme_IPv6
		}
	}
	return &v2.Endpoints{Scheme: scheme, Addresses: []*v2.Address{{Host: host, Port: int32(p)}}}
}

// routeBroker is one group of a cluster route in routes.
func (g *Gateway) routeBroker(rb broker.RouteBroker) *v2.Broker {
	ep := rb.Endpoint
	if rb.Self && ep == "" {
		ep = g.adv
	}
	eps := endpointsOf(ep)
	for _, r := range rb.Replicas {
		// Every member serves the group's clients (a replica forwards to
		// the master: forward.go); the SDK dials the list and moves on
		// when its address dies. Only addresses of one scheme form a list.
		if re := endpointsOf(r); re.Scheme == eps.Scheme {
			eps.Addresses = append(eps.Addresses, re.Addresses...)
		}
	}
	return &v2.Broker{Name: rb.Name, Id: 0, Endpoints: eps}
}

// queuePerm is queue id's permission among read and write queues under
// perm.
func queuePerm(read, write, perm, id int32) v2.Permission {
	r := id < read && perm&meta.PermRead != 0
	w := id < write && perm&meta.PermWrite != 0
	switch {
	case r && w:
		return v2.Permission_READ_WRITE
	case r:
		return v2.Permission_READ
	case w:
		return v2.Permission_WRITE
	}
	return v2.Permission_NONE
}

// clusterRoute is topic's route over the whole cluster (broker.Route):
// every group's queues with the endpoint of its master (the broker
// decides the ACL: PUB or SUB on the topic, PUB when the query creates
// it).
func (g *Gateway) clusterRoute(ctx context.Context, s *session, topic string, create bool) (*broker.Route, *v2.Status) {
	if topic == "" {
		return nil, statusf(v2.Code_ILLEGAL_TOPIC, "topic is empty")
	}
	if g.opts.Broker == nil {
		return nil, noCore()
	}
	rt, err := g.opts.Broker.Route(ctx, g.callerOf(ctx, s), topic, create)
	if err != nil {
		return nil, g.topicStatus(topic, err)
	}
	return rt, nil
}

// QueryRoute answers the topic's queues on every broker of the cluster,
// each with the gRPC endpoint of its group's master, as RocketMQ's proxy
// in local mode does: a client that knows one endpoint uses them all.
func (g *Gateway) QueryRoute(ctx context.Context, req *v2.QueryRouteRequest) (*v2.QueryRouteResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.QueryRouteResponse{Status: st}, nil
	}
	topic := req.GetTopic().GetName()
	rt, st := g.clusterRoute(ctx, s, topic, true)
	if st != nil {
		return &v2.QueryRouteResponse{Status: st}, nil
	}
	types := g.opts.AcceptTypes(rt.Config.Attributes)
	res := &v2.Resource{Name: topic, ResourceNamespace: req.GetTopic().GetResourceNamespace()}
	out := &v2.QueryRouteResponse{Status: okStatus()}
	for _, rb := range rt.Brokers {
		b := g.routeBroker(rb)
		for id := range max(rb.ReadQueues, rb.WriteQueues) {
			out.MessageQueues = append(out.MessageQueues, &v2.MessageQueue{Topic: res, Id: id,
				Permission: queuePerm(rb.ReadQueues, rb.WriteQueues, rb.Perm, id), Broker: b, AcceptMessageTypes: types})
		}
	}
	return out, nil
}

// QueryAssignment answers the queues a push consumer should receive from,
// on every broker of the cluster with readable queues of the topic: one
// per broker with queue id -1 (the broker pops from all of them), or, for
// an orderly group, one per readable queue.
func (g *Gateway) QueryAssignment(ctx context.Context, req *v2.QueryAssignmentRequest) (*v2.QueryAssignmentResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.QueryAssignmentResponse{Status: st}, nil
	}
	topic := req.GetTopic().GetName()
	rt, st := g.clusterRoute(ctx, s, topic, false)
	if st != nil {
		return &v2.QueryAssignmentResponse{Status: st}, nil
	}
	res := &v2.Resource{Name: topic, ResourceNamespace: req.GetTopic().GetResourceNamespace()}
	types := g.opts.AcceptTypes(rt.Config.Attributes)
	orderly := g.groupConfig(ctx, s, req.GetGroup().GetName()).ConsumeMessageOrderly
	out := &v2.QueryAssignmentResponse{Status: okStatus()}
	for _, rb := range rt.Brokers {
		if rb.Perm&meta.PermRead == 0 || rb.ReadQueues == 0 {
			continue
		}
		b := g.routeBroker(rb)
		if !orderly {
			out.Assignments = append(out.Assignments, &v2.Assignment{MessageQueue: &v2.MessageQueue{Topic: res, Id: -1,
				Permission: v2.Permission_READ_WRITE, Broker: b, AcceptMessageTypes: types}})
			continue
		}
		for id := range rb.ReadQueues {
			out.Assignments = append(out.Assignments, &v2.Assignment{MessageQueue: &v2.MessageQueue{Topic: res, Id: id,
				Permission: queuePerm(rb.ReadQueues, rb.WriteQueues, rb.Perm, id), Broker: b, AcceptMessageTypes: types}})
		}
	}
	if len(out.Assignments) == 0 {
		return &v2.QueryAssignmentResponse{Status: statusf(v2.Code_FORBIDDEN, "topic %s has no readable queue", quote(topic))}, nil
	}
	return out, nil
}
