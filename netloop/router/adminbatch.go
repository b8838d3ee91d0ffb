package router

// The batch forms of topic and group creation, as mqadmin updateTopicList
// and updateSubGroupList send them: UPDATE_AND_CREATE_TOPIC_LIST (18, body
// {"topicConfigList":[TopicConfig...]}) and
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225, body
// {"groupConfigList":[SubscriptionGroupConfig...]}). Each entry is checked
// as its single form (17, 200) checks it, and the first bad one refuses
// the whole request (29, naming it); otherwise all are stored in one change
// of the table. 18 is answered once the name servers serve the topics, as
// 17 is.

import (
	"encoding/json"
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/lenient"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// topicConfigWire is a TopicConfig as a Java tool writes it, read
// leniently (numbers and strings for one another).
type topicConfigWire struct {
	TopicName       lenient.String `json:"topicName"`
	ReadQueueNums   lenient.Int32  `json:"readQueueNums"`
	WriteQueueNums  lenient.Int32  `json:"writeQueueNums"`
	Perm            lenient.Int32  `json:"perm"`
	TopicFilterType lenient.String `json:"topicFilterType"`
	TopicSysFlag    lenient.Int32  `json:"topicSysFlag"`
	Order           lenient.Bool   `json:"order"`
	// Attributes are RocketMQ's modification list as a map ("+key":
	// value, "-key": ""), as MQClientAPIImpl fills it.
	Attributes map[string]string `json:"attributes"`
}

func (r *Router) handleCreateTopicList(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	var body struct {
		TopicConfigList []topicConfigWire `json:"topicConfigList"`
	}
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.InvalidParameter, "topic config list: %v", err)
	}
	specs := make([]broker.TopicSpec, len(body.TopicConfigList))
	for i, w := range body.TopicConfigList {
		specs[i] = broker.TopicSpec{Name: string(w.TopicName), ReadQueues: int32(w.ReadQueueNums),
			WriteQueues: int32(w.WriteQueueNums), Perm: int32(w.Perm), Filter: string(w.TopicFilterType),
			Order: bool(w.Order), SysFlag: int32(w.TopicSysFlag), Attributes: meta.FormatModifications(w.Attributes)}
	}
	r.core.PutTopics(callerOf(c, cmd), specs, func(err *broker.Error) { r.answer(c, cmd, err) })
	return nil
}

func (r *Router) handleCreateGroupList(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	var body struct {
		GroupConfigList []json.RawMessage `json:"groupConfigList"`
	}
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.InvalidParameter, "group config list: %v", err)
	}
	if len(body.GroupConfigList) == 0 {
		return refuse(remoting.InvalidParameter, "group config list is empty")
	}
	cfgs := make([]meta.SubscriptionGroupConfig, 0, len(body.GroupConfigList))
	for i, raw := range body.GroupConfigList {
		cfg, err := meta.DecodeSubscriptionGroupConfig(raw)
		if err != nil {
			return refuse(remoting.InvalidParameter, "group %d: %v", i, err)
		}
		if err := meta.ValidateGroup(cfg.GroupName); err != nil {
			return refuse(remoting.InvalidParameter, "group %d: %s", i, strings.TrimSuffix(err.Error(), ": "+meta.ErrInvalidGroup.Error()))
		}
		cfgs = append(cfgs, cfg)
	}
	r.groupsSt.Send(&groups.PutMany{Configs: cfgs, Done: func(err error) {
		if err != nil {
			r.reply(c, cmd, remoting.SystemError, err.Error())
			return
		}
		r.reply(c, cmd, remoting.Success, "")
	}})
	return nil
}
