package router

// UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215),
// GET_ALL_TOPIC_CONFIG (21), GET_TOPIC_CONFIG (351).

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

func (r *Router) handleCreateTopic(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	name := p.str("topic")
	readN := int32(p.int("readQueueNums", true, 0))
	writeN := int32(p.int("writeQueueNums", true, 0))
	perm := int32(p.int("perm", true, 0))
	if ref := p.refusal(); ref != nil {
		return ref
	}
	cfg, err := checkTopicConfig(name, readN, writeN, perm, cmd.Field("topicFilterType"), cmd.Field("order") == "true")
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	mods, ref := r.topicAttributes(cmd.Field("attributes"))
	if ref != nil {
		return ref
	}
	r.topicsSt.Send(&topics.Put{Config: cfg, Attributes: mods, Done: func(err error) {
		if err != nil {
			r.reply(c, cmd, attrErrorCode(err), err.Error())
			return
		}
		// Admin tools ask for the route right after: answer once the name
		// servers serve it (bounded by Config.RouteWait).
		r.answerOnceRouted(c, cmd, name)
	}})
	return nil
}

// topicAttributes parses UPDATE_AND_CREATE_TOPIC's attributes header
// (meta.ParseAttributes; the topics stage applies it to the topic's
// current attributes) and refuses message.type=MIXED unless the broker
// allows it (RocketMQ's enableMixedMessageType).
func (r *Router) topicAttributes(s string) (map[string]string, *Refusal) {
	mods, err := meta.ParseAttributes(s)
	if err != nil {
		return nil, &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	if meta.MessageType(mods["+"+meta.AttrMessageType]) == meta.MessageTypeMixed && !r.p.Settings().MixedMessageType {
		return nil, &Refusal{Code: remoting.InvalidParameter,
			Remark: "MIXED message type is not supported. (set enableMixedMessageType / --mixed-message-type to allow it)"}
	}
	return mods, nil
}

// attrErrorCode is the answer code of a topic update the stage refused:
// INVALID_PARAMETER for its attributes (RocketMQ answers SYSTEM_ERROR with
// the same words), SYSTEM_ERROR otherwise.
func attrErrorCode(err error) int32 {
	if errors.Is(err, meta.ErrAttribute) {
		return remoting.InvalidParameter
	}
	return remoting.SystemError
}

func (r *Router) handleDeleteTopic(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	name := cmd.Field("topic")
	if strings.TrimSpace(name) == "" {
		return &Refusal{Code: remoting.InvalidParameter, Remark: "The specified topic is blank."}
	}
	if meta.IsSystemTopic(name) {
		return refuse(remoting.InvalidParameter, "The topic[%s] is conflict with system topic.", name)
	}
	// The offsets go first: no journal record of them may follow the
	// topic's delete record in the log (offsets.DropTopic).
	r.offsetsSt.Send(&offsets.DropTopic{Topic: name, Done: func() {
		r.topicsSt.Send(&topics.Delete{Topic: name, Done: func(err error) {
			if err != nil {
				r.reply(c, cmd, remoting.SystemError, err.Error())
				return
			}
			r.reply(c, cmd, remoting.Success, "")
		}})
	}})
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
