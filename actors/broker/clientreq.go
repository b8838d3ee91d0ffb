package broker

// HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38).

import (
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (b *Broker) handleHeartbeat(c *netloop.Conn, cmd *remoting.Command) {
	hb, err := clients.ParseHeartbeat(cmd.Body)
	if err != nil {
		b.reply(c, cmd, remoting.InvalidParameter, err.Error())
		return
	}
	b.clientsSt.Send(&clients.Heartbeat{Conn: c, Data: hb, Done: func() {
		b.reply(c, cmd, remoting.Success, "")
	}})
}

func (b *Broker) handleUnregister(c *netloop.Conn, cmd *remoting.Command) {
	id := cmd.Field("clientID")
	if id == "" {
		b.reply(c, cmd, remoting.InvalidParameter, "the custom field <clientID> is null")
		return
	}
	b.clientsSt.Send(&clients.Unregister{ClientID: id, ProducerGroup: cmd.Field("producerGroup"),
		ConsumerGroup: cmd.Field("consumerGroup"), Done: func() { b.reply(c, cmd, remoting.Success, "") }})
}

func (b *Broker) handleConsumerList(c *netloop.Conn, cmd *remoting.Command) {
	group := cmd.Field("consumerGroup")
	if group == "" {
		b.reply(c, cmd, remoting.InvalidParameter, "the custom field <consumerGroup> is null")
		return
	}
	b.clientsSt.Send(&clients.ListConsumers{Group: group, Reply: func(ids []string) {
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		if len(ids) == 0 {
			resp.Code, resp.Remark = remoting.SystemError, "no consumer for this group, "+group
		}
		resp.Body = clients.FormatConsumerList(ids)
		b.send(c, cmd, resp)
	}})
}

// ensureRetryTopic creates %RETRY%<group> if missing.
func (b *Broker) ensureRetryTopic(group string) { b.ensureGroupTopic(meta.RetryTopic(group)) }

// ensureGroupTopic creates a group's %RETRY% or %DLQ% topic (1 queue,
// read-write) if missing; the topics stage re-registers the broker so the
// route is published.
func (b *Broker) ensureGroupTopic(name string) {
	if _, ok := b.topicView.Get(name); ok {
		return
	}
	b.topicsSt.Send(&topics.Ensure{Config: meta.TopicConfig{
		TopicName: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: meta.PermRead | meta.PermWrite,
		TopicFilterType: "SINGLE_TAG",
	}, Done: func(meta.TopicConfig, error) {}})
}
