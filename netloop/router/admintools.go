package router

// The smaller admin requests of mqadmin and rocketmq-dashboard:
// GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305), CONSUME_MESSAGE_DIRECTLY (309,
// relayed to the consumer with the stored message), GET_ALL_PRODUCER_INFO
// (328), QUERY_TOPICS_BY_CONSUMER (343), QUERY_SUBSCRIPTION_BY_CONSUMER
// (345), GET_SUBSCRIPTIONGROUP_CONFIG (352), CLONE_GROUP_OFFSET (314);
// each answered in RocketMQ
// 5.3's body layout (AdminBrokerProcessor).

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// topicList is RocketMQ's TopicList body; brokerAddr is omitted when empty.
type topicList struct {
	BrokerAddr string   `json:"brokerAddr,omitempty"`
	TopicList  []string `json:"topicList"`
}

// handleSystemTopics serves 305: the system topics, as the dashboard's
// topic page and mqadmin exportMetadata ask for them.
func (r *Router) handleSystemTopics(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	names := meta.SystemTopics()
	for _, n := range []string{r.cfg.Cluster, r.cfg.BrokerName} {
		if n != "" {
			names = append(names, n)
		}
	}
	if r.cfg.Cluster != "" {
		names = append(names, meta.ReplyTopic(r.cfg.Cluster))
	}
	slices.Sort(names)
	body, err := json.Marshal(topicList{TopicList: slices.Compact(names)})
	r.sendBody(c, cmd, body, err)
	return nil
}

// handleConsumeDirectly serves 309 (the dashboard's "resend", mqadmin
// queryMsgById -d): the message at the offset of msgId is read and sent to
// the named consumer, whose answer (ConsumeMessageDirectlyResult) is
// relayed back, as RocketMQ's callConsumer does.
func (r *Router) handleConsumeDirectly(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, clientID, msgID := p.str("consumerGroup"), p.str("clientId"), p.str("msgId")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	_, off, err := message.ParseOffsetMsgID(msgID)
	if err != nil {
		return refuse(remoting.SystemError, "msgId %q is not a message id of this broker: %v", msgID, err)
	}
	fields := make(map[string]string, len(cmd.ExtFields)+3)
	for k, v := range cmd.ExtFields {
		fields[k] = v
	}
	fields["brokerName"] = r.cfg.BrokerName
	if t := cmd.Field("topic"); t != "" {
		if cfg, ok := r.topicView.Get(t); ok {
			fields["topicSysFlag"] = strconv.Itoa(int(cfg.TopicSysFlag))
		}
	}
	if g, ok := r.groupView.Get(group); ok {
		fields["groupSysFlag"] = strconv.Itoa(int(g.GroupSysFlag))
	}
	r.pullSt.Send(&pull.ReadAt{Offset: off, Reply: func(rec []byte, err error) {
		if err != nil {
			r.refuse(c, cmd, refuse(remoting.SystemError, "can not find message by the offset, %d: %v", off, err))
			return
		}
		fwd := clients.Relay{RequestCode: remoting.ConsumeMessageDirectly, Fields: fields, Body: rec}
		r.clientsSt.Send(&clients.Invoke{Group: group, ClientID: clientID, Request: fwd, Timeout: clientCallTimeout,
			Reply: func(answer clients.Answer, err error) { r.relayClientAnswer(c, cmd, group, clientID, answer, err) }})
	}})
	return nil
}

// relayClientAnswer answers an admin request relayed to a consumer with
// the consumer's answer, or with RocketMQ's callConsumer refusals.
func (r *Router) relayClientAnswer(c *netloop.Conn, cmd *remoting.Command, group, clientID string, answer clients.Answer, err error) {
	switch {
	case errors.Is(err, clients.ErrNotOnline):
		r.refuse(c, cmd, refuse(remoting.SystemError, "The Consumer <%s> <%s> not online", group, clientID))
	case errors.Is(err, clients.ErrCallTimeout):
		r.refuse(c, cmd, refuse(remoting.ConsumeMsgTimeout, "consumer <%s> <%s> Timeout: %v", group, clientID, err))
	case err != nil:
		r.refuse(c, cmd, refuse(remoting.SystemError, "invoke consumer <%s> <%s> Exception: %v", group, clientID, err))
	default:
		resp := remoting.NewResponse(cmd, answer.Code, answer.Remark)
		resp.ExtFields, resp.Body = answer.Fields, answer.Body
		r.send(c, cmd, resp)
	}
}

// handleAllProducers serves 328 (mqadmin producer).
func (r *Router) handleAllProducers(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.clientsSt.Send(&clients.AllProducers{FailFunc: r.failWith(c, cmd), Reply: func(t adminbody.ProducerTableInfo) {
		body, err := json.Marshal(t)
		r.sendBody(c, cmd, body, err)
	}})
	return nil
}

// handleTopicsByConsumer serves 343: the topics a group has offsets for.
func (r *Router) handleTopicsByConsumer(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("group")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.offsetsSt.Send(&offsets.GroupTopics{Group: group, FailFunc: r.failWith(c, cmd), Reply: func(topics []string) {
		body, err := json.Marshal(topicList{BrokerAddr: r.core.Advertise().String(), TopicList: append([]string{}, topics...)})
		r.sendBody(c, cmd, body, err)
	}})
	return nil
}

// handleSubscriptionByConsumer serves 345: a group's subscription to a
// topic as its online consumers registered it (none: no
// subscriptionData, as RocketMQ answers).
func (r *Router) handleSubscriptionByConsumer(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("group"), p.str("topic")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.clientsSt.Send(&clients.SubscriptionOf{Group: group, Topic: topic, FailFunc: r.failWith(c, cmd),
		Reply: func(sd adminbody.SubscriptionData, found bool) {
			out := struct {
				Group            string                      `json:"group"`
				SubscriptionData *adminbody.SubscriptionData `json:"subscriptionData,omitempty"`
				Topic            string                      `json:"topic"`
			}{Group: group, Topic: topic}
			if found {
				out.SubscriptionData = &sd
			}
			body, err := json.Marshal(out)
			r.sendBody(c, cmd, body, err)
		}})
	return nil
}

// handleGroupConfig serves 352: one subscription group's configuration.
func (r *Router) handleGroupConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("group")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	cfg, ok := r.groupView.Get(group)
	if !ok {
		return refuse(remoting.SubscriptionGroupNotExist, "No group in this broker")
	}
	body, err := json.Marshal(cfg)
	r.sendBody(c, cmd, body, err)
	return nil
}

// handleCloneGroupOffset serves 314 (mqadmin cloneGroupOffset): srcGroup's
// offsets of topic (blank: of every topic it has offsets for) are copied
// to destGroup. Unless offline, a topic the source group's online
// consumers do not subscribe to is skipped, as RocketMQ does; a topic the
// broker does not have is skipped too.
func (r *Router) handleCloneGroupOffset(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	src, dest := p.str("srcGroup"), p.str("destGroup")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	online := r.subView.Topics(src)
	offline := parseBool(cmd.Field("offline"))
	keep := func(topic string) bool {
		if _, ok := r.topicView.Get(topic); !ok {
			return false
		}
		return offline || len(online) == 0 || slices.Contains(online, topic)
	}
	var topics []string // nil: every topic src has offsets for
	if t := strings.TrimSpace(cmd.Field("topic")); t != "" {
		topics = []string{t}
	}
	r.offsetsSt.Send(&offsets.CloneGroup{Src: src, Dest: dest, Topics: topics, Keep: keep, FailFunc: r.failWith(c, cmd),
		Done: func([]string) { r.reply(c, cmd, remoting.Success, "") }})
	return nil
}
