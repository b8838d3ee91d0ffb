package broker

// UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215),
// GET_ALL_TOPIC_CONFIG (21).

import (
	"encoding/json"
	"fmt"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (b *Broker) handleCreateTopic(c *netloop.Conn, cmd *remoting.Command) {
	p := fieldParser{cmd: cmd}
	name := p.str("topic")
	readN := int32(p.int("readQueueNums", true, 0))
	writeN := int32(p.int("writeQueueNums", true, 0))
	perm := int32(p.int("perm", true, 0))
	if e := p.err(); e != "" {
		b.reply(c, cmd, remoting.InvalidParameter, e)
		return
	}
	if err := meta.ValidateTopic(name); err != nil {
		b.reply(c, cmd, remoting.InvalidParameter, err.Error())
		return
	}
	if meta.IsSystemTopic(name) {
		b.reply(c, cmd, remoting.InvalidParameter, fmt.Sprintf("the topic[%s] is conflict with system topic", name))
		return
	}
	if readN <= 0 || writeN <= 0 || readN > 1024 || writeN > 1024 {
		b.reply(c, cmd, remoting.InvalidParameter,
			fmt.Sprintf("queue counts must be in 1..1024, got read %d write %d", readN, writeN))
		return
	}
	filter := cmd.Field("topicFilterType")
	if filter == "" {
		filter = "SINGLE_TAG"
	}
	cfg := meta.TopicConfig{TopicName: name, ReadQueueNums: readN, WriteQueueNums: writeN,
		Perm:            perm & (meta.PermRead | meta.PermWrite | meta.PermInherit | meta.PermPriority),
		TopicFilterType: filter, Order: cmd.Field("order") == "true"}
	b.topicsSt.Send(&topics.Put{Config: cfg, Done: func(err error) {
		if err != nil {
			b.reply(c, cmd, remoting.SystemError, err.Error())
			return
		}
		b.reply(c, cmd, remoting.Success, "")
	}})
}

func (b *Broker) handleDeleteTopic(c *netloop.Conn, cmd *remoting.Command) {
	name := cmd.Field("topic")
	if name == "" {
		b.reply(c, cmd, remoting.InvalidParameter, "the custom field <topic> is null")
		return
	}
	if meta.IsSystemTopic(name) {
		b.reply(c, cmd, remoting.InvalidParameter, fmt.Sprintf("the topic[%s] is a system topic and cannot be deleted", name))
		return
	}
	b.topicsSt.Send(&topics.Delete{Topic: name, Done: func(err error) {
		if err != nil {
			b.reply(c, cmd, remoting.SystemError, err.Error())
			return
		}
		b.offsetsSt.Send(&offsets.DropTopic{Topic: name})
		b.reply(c, cmd, remoting.Success, "")
	}})
}

func (b *Broker) handleAllTopicConfig(c *netloop.Conn, cmd *remoting.Command) {
	t := b.topicView.Load()
	body, err := json.Marshal(struct {
		TopicConfigTable map[string]meta.TopicConfig `json:"topicConfigTable"`
		DataVersion      meta.DataVersion            `json:"dataVersion"`
	}{t.Topics, t.Version})
	if err != nil {
		b.reply(c, cmd, remoting.SystemError, err.Error())
		return
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.Body = body
	b.send(c, cmd, resp)
}
