package router

// UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215),
// GET_ALL_TOPIC_CONFIG (21), GET_TOPIC_CONFIG (351).

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (r *Router) handleCreateTopic(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	spec := broker.TopicSpec{Name: p.str("topic"), ReadQueues: int32(p.int("readQueueNums", true, 0)),
		WriteQueues: int32(p.int("writeQueueNums", true, 0)), Perm: int32(p.int("perm", true, 0)),
		Filter: cmd.Field("topicFilterType"), Order: cmd.Field("order") == "true", Attributes: cmd.Field("attributes")}
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.PutTopic(callerOf(c, cmd), spec, func(err *broker.Error) { r.answer(c, cmd, err) })
	return nil
}

func (r *Router) handleDeleteTopic(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.DeleteTopic(callerOf(c, cmd), strings.TrimSpace(cmd.Field("topic")), func(err *broker.Error) { r.answer(c, cmd, err) })
	return nil
}

func (r *Router) handleAllTopicConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	t := r.topicView.Load()
	body, err := json.Marshal(struct {
		TopicConfigTable map[string]meta.TopicConfig `json:"topicConfigTable"`
		DataVersion      meta.DataVersion            `json:"dataVersion"`
	}{t.Topics, t.Version})
	if err != nil {
		return &Refusal{Code: remoting.SystemError, Remark: err.Error()}
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.SetField("totalTopicNum", strconv.Itoa(len(t.Topics)))
	resp.Body = body
	r.send(c, cmd, resp)
	return nil
}

// handleTopicConfig serves GET_TOPIC_CONFIG (mqadmin consumerProgress asks
// it for every topic it reports): the topic's TopicConfigAndQueueMapping,
// which is the TopicConfig (wheelmq has no static-topic mapping).
func (r *Router) handleTopicConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	cfg, ok := r.topicView.Get(topic)
	if !ok {
		return refuse(remoting.TopicNotExist, "No topic in this broker. topic: %s", topic)
	}
	attrs := cfg.Attributes
	if attrs == nil {
		attrs = map[string]string{}
	}
	body, err := json.Marshal(struct {
		meta.TopicConfig
		Attributes map[string]string `json:"attributes"`
	}{cfg, attrs})
	r.sendBody(c, cmd, body, err)
	return nil
}
