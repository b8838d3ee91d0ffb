package router

// HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38).

import (
	"fmt"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (r *Router) handleHeartbeat(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	hb, err := clients.ParseHeartbeat(cmd.Body)
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	code, remark := remoting.Success, ""
	for _, cd := range hb.ConsumerDataSet {
		for _, sd := range cd.SubscriptionDataSet {
			if c, rm := r.filters.Check(sd.ExpressionType, sd.SubString, sd.SubVersion); c != remoting.Success {
				code, remark = c, fmt.Sprintf("consumer group %s, topic %s: %s", cd.GroupName, sd.Topic, rm)
			}
		}
	}
	apply := func() {
		r.clientsSt.Send(&clients.Heartbeat{Conn: c, Data: hb, FailFunc: r.failWith(c, cmd), Done: func() {
			r.reply(c, cmd, code, remark)
		}})
	}
	missing := r.missingRetryTopics(hb)
	if len(missing) == 0 {
		apply()
		return nil
	}
	// Like RocketMQ, a new group's %RETRY% topic exists and is registered
	// with the name servers before the heartbeat is answered: a client that
	// asks for its route right after must find it.
	var left atomic.Int32
	left.Store(int32(len(missing)))
	for _, topic := range missing {
		r.p.EnsureGroupTopic(topic, func(err error) {
			if err != nil {
				r.log.Warn().Err(err).Str("topic", topic).Msg("create retry topic at heartbeat failed")
			}
			if left.Add(-1) == 0 {
				r.p.RegisterNow(apply)
			}
		})
	}
	return nil
}

// missingRetryTopics lists the %RETRY% topics of the heartbeat's clustering
// consumer groups that do not exist yet.
func (r *Router) missingRetryTopics(hb clients.HeartbeatData) []string {
	var out []string
	for _, cd := range hb.ConsumerDataSet {
		if cd.MessageModel == "BROADCASTING" || cd.GroupName == "" {
			continue
		}
		topic := meta.RetryTopic(cd.GroupName)
		if _, ok := r.topicView.Get(topic); !ok {
			out = append(out, topic)
		}
	}
	return out
}

func (r *Router) handleUnregister(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	id := cmd.Field("clientID")
	if id == "" {
		return &Refusal{Code: remoting.InvalidParameter, Remark: "the custom field <clientID> is null"}
	}
	r.clientsSt.Send(&clients.Unregister{ClientID: id, ProducerGroup: cmd.Field("producerGroup"),
		ConsumerGroup: cmd.Field("consumerGroup"), FailFunc: r.failWith(c, cmd), Done: func() { r.reply(c, cmd, remoting.Success, "") }})
	return nil
}

func (r *Router) handleConsumerList(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	group := cmd.Field("consumerGroup")
	if group == "" {
		return &Refusal{Code: remoting.InvalidParameter, Remark: "the custom field <consumerGroup> is null"}
	}
	r.clientsSt.Send(&clients.ListConsumers{Group: group, FailFunc: r.failWith(c, cmd), Reply: func(ids []string) {
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		if len(ids) == 0 {
			resp.Code, resp.Remark = remoting.SystemError, "no consumer for this group, "+group
		}
		resp.Body = clients.FormatConsumerList(ids)
		r.send(c, cmd, resp)
	}})
	return nil
}
