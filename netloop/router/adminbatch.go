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
	"fmt"
	"strings"

	"github.com/wheelmq/wheelmq/actors/groups"
	"github.com/wheelmq/wheelmq/actors/topics"
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

// checkTopicConfig applies UPDATE_AND_CREATE_TOPIC's checks to one topic.
func checkTopicConfig(name string, readN, writeN, perm int32, filter string, order bool) (meta.TopicConfig, error) {
	if err := meta.ValidateTopic(name); err != nil {
		return meta.TopicConfig{}, err
	}
	if meta.IsSystemTopic(name) {
		return meta.TopicConfig{}, fmt.Errorf("the topic[%s] is conflict with system topic", name)
	}
	if readN <= 0 || writeN <= 0 || readN > 1024 || writeN > 1024 {
		return meta.TopicConfig{}, fmt.Errorf("queue counts must be in 1..1024, got read %d write %d", readN, writeN)
	}
	if filter == "" {
		filter = "SINGLE_TAG"
	}
	return meta.TopicConfig{TopicName: name, ReadQueueNums: readN, WriteQueueNums: writeN,
		Perm:            perm & (meta.PermRead | meta.PermWrite | meta.PermInherit | meta.PermPriority),
		TopicFilterType: filter, Order: order}, nil
}

func (r *Router) handleCreateTopicList(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	var body struct {
		TopicConfigList []topicConfigWire `json:"topicConfigList"`
	}
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.InvalidParameter, "topic config list: %v", err)
	}
	if len(body.TopicConfigList) == 0 {
		return refuse(remoting.InvalidParameter, "topic config list is empty")
	}
	cfgs := make([]meta.TopicConfig, 0, len(body.TopicConfigList))
	names := make([]string, 0, len(body.TopicConfigList))
	mods := map[string]map[string]string{}
	for i, w := range body.TopicConfigList {
		cfg, err := checkTopicConfig(string(w.TopicName), int32(w.ReadQueueNums), int32(w.WriteQueueNums), int32(w.Perm),
			string(w.TopicFilterType), bool(w.Order))
		if err != nil {
			return refuse(remoting.InvalidParameter, "topic %d (%s): %v", i, w.TopicName, err)
		}
		cfg.TopicSysFlag = int32(w.TopicSysFlag)
		m, ref := r.topicAttributes(meta.FormatModifications(w.Attributes))
		if ref != nil {
			return refuse(remoting.InvalidParameter, "topic %d (%s): %s", i, w.TopicName, ref.Remark)
		}
		mods[cfg.TopicName] = m
		cfgs, names = append(cfgs, cfg), append(names, cfg.TopicName)
	}
	r.topicsSt.Send(&topics.PutMany{Configs: cfgs, Attributes: mods, Done: func(err error) {
		if err != nil {
			r.reply(c, cmd, attrErrorCode(err), err.Error())
			return
		}
		r.answerOnceRouted(c, cmd, names...)
	}})
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
