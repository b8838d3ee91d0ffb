package grpcgw

// QueryRoute and QueryAssignment: this broker's queues of a topic.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// topicInfo is what GET_TOPIC_CONFIG (351) answers, as far as routes need.
type topicInfo struct {
	TopicName      string            `json:"topicName"`
	ReadQueueNums  int32             `json:"readQueueNums"`
	WriteQueueNums int32             `json:"writeQueueNums"`
	Perm           int32             `json:"perm"`
	Order          bool              `json:"order"`
	Attributes     map[string]string `json:"attributes"`
}

// groupInfo is what GET_SUBSCRIPTIONGROUP_CONFIG (352) answers, as far as
// settings need.
type groupInfo struct {
	ConsumeMessageOrderly bool  `json:"consumeMessageOrderly"`
	RetryMaxTimes         int32 `json:"retryMaxTimes"`
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
	}
	return all
}

// topicConfig asks the broker for topic's configuration; create makes it
// first when the broker does not have it and topics auto-create. A nil
// info comes with the status to answer.
func (g *Gateway) topicConfig(ctx context.Context, s *session, topic string, create bool) (*topicInfo, *v2.Status) {
	if topic == "" {
		return nil, statusf(v2.Code_ILLEGAL_TOPIC, "topic is empty")
	}
	for attempt := 0; ; attempt++ {
		resp, err := s.invoke(ctx, remoting.NewRequest(remoting.GetTopicConfig, map[string]string{"topic": topic}, nil))
		if err != nil {
			return nil, internalStatus(err)
		}
		if resp.Code == remoting.TopicNotExist && create && g.opts.AutoCreateTopic && attempt == 0 {
			if st := g.createTopic(ctx, s, topic); st != nil {
				return nil, st
			}
			continue
		}
		if resp.Code != remoting.Success {
			st := fromRemoting(resp, "topic config")
			if resp.Code == remoting.TopicNotExist {
				st.Message = fmt.Sprintf("topic %s does not exist: %s", quote(topic), resp.Remark)
			}
			return nil, st
		}
		var ti topicInfo
		if err := json.Unmarshal(resp.Body, &ti); err != nil {
			return nil, internalStatus(fmt.Errorf("topic config of %s: %w", topic, err))
		}
		return &ti, nil
	}
}

// createTopic creates topic as a first send through TBW102 would: the
// default queue count, read and write.
func (g *Gateway) createTopic(ctx context.Context, s *session, topic string) *v2.Status {
	q := strconv.Itoa(g.opts.DefaultQueueNums)
	resp, err := s.invoke(ctx, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": strconv.Itoa(int(meta.PermRead | meta.PermWrite)),
		"topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil {
		return internalStatus(err)
	}
	if resp.Code != remoting.Success {
		return fromRemoting(resp, "create topic")
	}
	g.log.Info().Str("topic", topic).Int("queues", g.opts.DefaultQueueNums).Str("client_id", s.id).Msg("topic created by a gRPC route query")
	return nil
}

// groupConfig asks the broker for group's configuration (zero when the
// broker does not know it: RocketMQ's defaults).
func (g *Gateway) groupConfig(ctx context.Context, s *session, group string) groupInfo {
	gi := groupInfo{RetryMaxTimes: meta.DefaultRetryMaxTimes}
	if group == "" {
		return gi
	}
	resp, err := s.invoke(ctx, remoting.NewRequest(remoting.GetSubscriptionGroupConfig, map[string]string{"group": group}, nil))
	if err != nil || resp.Code != remoting.Success {
		return gi
	}
	if err := json.Unmarshal(resp.Body, &gi); err != nil {
		g.log.Warn().Err(err).Str("group", group).Msg("subscription group config undecodable: defaults used")
		return groupInfo{RetryMaxTimes: meta.DefaultRetryMaxTimes}
	}
	return gi
}

// endpoints is the gateway's advertised address as route endpoints.
func (g *Gateway) endpoints() *v2.Endpoints {
	host, port, err := net.SplitHostPort(g.adv)
	if err != nil {
		return &v2.Endpoints{Scheme: v2.AddressScheme_DOMAIN_NAME, Addresses: []*v2.Address{{Host: g.adv}}}
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

// broker is this broker in routes.
func (g *Gateway) broker() *v2.Broker {
	return &v2.Broker{Name: g.opts.BrokerName, Id: 0, Endpoints: g.endpoints()}
}

// permission is queue id's permission under ti.
func permission(ti *topicInfo, id int32) v2.Permission {
	r := id < ti.ReadQueueNums && ti.Perm&meta.PermRead != 0
	w := id < ti.WriteQueueNums && ti.Perm&meta.PermWrite != 0
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

// QueryRoute answers this broker's queues of the topic.
func (g *Gateway) QueryRoute(ctx context.Context, req *v2.QueryRouteRequest) (*v2.QueryRouteResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.QueryRouteResponse{Status: st}, nil
	}
	topic := req.GetTopic().GetName()
	ti, st := g.topicConfig(ctx, s, topic, true)
	if st != nil {
		return &v2.QueryRouteResponse{Status: st}, nil
	}
	types := g.opts.AcceptTypes(ti.Attributes)
	b := g.broker()
	n := max(ti.ReadQueueNums, ti.WriteQueueNums)
	out := &v2.QueryRouteResponse{Status: okStatus()}
	for id := range n {
		out.MessageQueues = append(out.MessageQueues, &v2.MessageQueue{Topic: &v2.Resource{Name: topic,
			ResourceNamespace: req.GetTopic().GetResourceNamespace()}, Id: id, Permission: permission(ti, id),
			Broker: b, AcceptMessageTypes: types})
	}
	return out, nil
}

// QueryAssignment answers the queues a push consumer should receive from:
// one per broker with queue id -1 (the broker pops from all of them),
// or, for an orderly group, one per readable queue.
func (g *Gateway) QueryAssignment(ctx context.Context, req *v2.QueryAssignmentRequest) (*v2.QueryAssignmentResponse, error) {
	s, st := g.session(ctx)
	if st != nil {
		return &v2.QueryAssignmentResponse{Status: st}, nil
	}
	topic := req.GetTopic().GetName()
	ti, st := g.topicConfig(ctx, s, topic, false)
	if st != nil {
		return &v2.QueryAssignmentResponse{Status: st}, nil
	}
	if ti.Perm&meta.PermRead == 0 || ti.ReadQueueNums == 0 {
		return &v2.QueryAssignmentResponse{Status: statusf(v2.Code_FORBIDDEN, "topic %s has no readable queue", quote(topic))}, nil
	}
	res := &v2.Resource{Name: topic, ResourceNamespace: req.GetTopic().GetResourceNamespace()}
	types := g.opts.AcceptTypes(ti.Attributes)
	out := &v2.QueryAssignmentResponse{Status: okStatus()}
	if !g.groupConfig(ctx, s, req.GetGroup().GetName()).ConsumeMessageOrderly {
		out.Assignments = []*v2.Assignment{{MessageQueue: &v2.MessageQueue{Topic: res, Id: -1,
			Permission: v2.Permission_READ_WRITE, Broker: g.broker(), AcceptMessageTypes: types}}}
		return out, nil
	}
	for id := range ti.ReadQueueNums {
		out.Assignments = append(out.Assignments, &v2.Assignment{MessageQueue: &v2.MessageQueue{Topic: res, Id: id,
			Permission: permission(ti, id), Broker: g.broker(), AcceptMessageTypes: types}})
	}
	return out, nil
}
