package router

// HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38).

import (
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/groups"
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
	answer := &Refusal{Code: code, Remark: remark}
	missing := r.missingGroups(hb)
	if len(missing) > 0 && !r.p.Settings().AutoCreateGroup {
		// Like RocketMQ: a consumer of an unknown group is not registered.
		hb = withoutGroups(hb, missing)
		r.log.Debug().Strs("groups", missing).Str("client", hb.ClientID).
			Msg("heartbeat names unknown consumer groups and auto-creation is off: not registered")
		missing = nil
	}
	if len(missing) == 0 {
		r.heartbeatRetryTopics(c, cmd, hb, answer)
		return nil
	}
	r.groupsSt.Send(&groups.Ensure{Names: missing, Done: func(err error) {
		if err != nil {
			r.log.Warn().Err(err).Strs("groups", missing).Msg("create subscription groups at heartbeat failed")
		}
		r.heartbeatRetryTopics(c, cmd, hb, answer)
	}})
	return nil
}

// heartbeatRetryTopics registers the heartbeat once its groups' %RETRY%
// topics exist, then answers it with answer's code and remark: like
// RocketMQ, a new group's retry topic (with the group's retryQueueNums
// queues) exists and is registered with the name servers before the
// heartbeat is answered, so that a client that asks for its route right
// after finds it.
func (r *Router) heartbeatRetryTopics(c *netloop.Conn, cmd *remoting.Command, hb clients.HeartbeatData, answer *Refusal) {
	apply := func() {
		r.clientsSt.Send(&clients.Heartbeat{Conn: c, Data: hb, Language: cmd.Language, Version: cmd.Version,
			FailFunc: r.failWith(c, cmd), Done: func() { r.reply(c, cmd, answer.Code, answer.Remark) }})
	}
	missing := r.missingRetryTopics(hb)
	if len(missing) == 0 {
		apply()
		return
	}
	var left atomic.Int32
	left.Store(int32(len(missing)))
	names := slices.Sorted(maps.Values(missing))
	for group, topic := range missing {
		queues := meta.DefaultRetryQueueNums
		if g, ok := r.groupView.Get(group); ok {
			queues = g.RetryQueueNums
		}
		r.p.EnsureGroupTopicQueues(topic, queues, func(err error) {
			if err != nil {
				r.log.Warn().Err(err).Str("topic", topic).Msg("create retry topic at heartbeat failed")
			}
			if left.Add(-1) == 0 {
				r.p.AwaitRoutes(names, apply)
			}
		})
	}
}

// missingGroups lists the heartbeat's consumer groups that have no
// subscription group configuration yet.
func (r *Router) missingGroups(hb clients.HeartbeatData) []string {
	var out []string
	for _, cd := range hb.ConsumerDataSet {
		if _, ok := r.groupView.Get(cd.GroupName); !ok && cd.GroupName != "" && !slices.Contains(out, cd.GroupName) {
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
func (r *Router) missingRetryTopics(hb clients.HeartbeatData) map[string]string {
	out := map[string]string{}
	for _, cd := range hb.ConsumerDataSet {
		if cd.MessageModel == "BROADCASTING" || cd.GroupName == "" {
			continue
		}
		topic := meta.RetryTopic(cd.GroupName)
		if _, ok := r.topicView.Get(topic); !ok {
			out[cd.GroupName] = topic
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
