package router

// The ACL on the broker port: what every request code needs (the table
// below; docs/compatibility.md, "Permissions", lists it), checked in
// OnCommand before the handler runs, and on the plain-send hot path
// (fastsend.go) from the frame as it lies. With no Guard (NewGuarded's
// nil, New: no --acl-file) nothing is checked.
//
// A code missing from the table needs an admin account: codes wheelmq
// does not serve get REQUEST_CODE_NOT_SUPPORTED only when an admin sends
// them, and a handler added without a rule is admin-only until it gets
// one (TestEveryHandledCodeHasARule holds the table to the handlers).
//
// Some requests name their message by offset or id, so their topic is
// known only once the handler read the message: their rule is deferred
// (auth.Needs.Deferred) and the handler calls deferredCheck with the
// topic before it acts.

import (
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

var (
	subTopic = auth.FieldNeed{Field: "topic", Kind: auth.KindTopic, Perm: auth.PermSub}
	anyTopic = auth.FieldNeed{Field: "topic", Kind: auth.KindTopic, Perm: auth.PermAny}
	subGroup = func(field string) auth.FieldNeed {
		return auth.FieldNeed{Field: field, Kind: auth.KindGroup, Perm: auth.PermSub}
	}
	consumerGroupAndTopic = auth.FieldRule("SUB on topic and group", subTopic, subGroup("consumerGroup"))
	topicOnly             = auth.FieldRule("SUB on topic", subTopic)
)

// Permissions is what each request code of the broker port needs.
var Permissions = auth.Table{
	remoting.SendMessage:        sendRule,
	remoting.SendMessageV2:      sendRule,
	remoting.SendBatchMessage:   sendRule,
	remoting.SendReplyMessage:   sendRule,
	remoting.SendReplyMessageV2: sendRule,
	remoting.EndTransaction:     auth.DeferredRule("PUB on the half message's topic (checked once it is read)", auth.PermPub),
	remoting.RecallMessage:      auth.FieldRule("PUB on topic", auth.FieldNeed{Field: "topic", Kind: auth.KindTopic, Perm: auth.PermPub}),
	remoting.CancelTimerMessage: auth.DeferredRule("PUB on the timer message's topic (checked once it is read)", auth.PermPub),
	remoting.ListTimerMessages:  topicOnly,

	remoting.PullMessage:                consumerGroupAndTopic,
	remoting.PopMessage:                 consumerGroupAndTopic,
	remoting.AckMessage:                 consumerGroupAndTopic,
	remoting.ChangeMessageInvisibleTime: consumerGroupAndTopic,
	remoting.PeekMessage:                consumerGroupAndTopic,
	remoting.Notification:               consumerGroupAndTopic,
	remoting.PollingInfo:                consumerGroupAndTopic,
	remoting.BatchAckMessage:            auth.DeferredRule("SUB on each entry's topic (checked per entry)", auth.PermSub),
	remoting.LitePullMessage:            consumerGroupAndTopic,
	remoting.PopLiteMessage:             consumerGroupAndTopic,
	remoting.LiteSubscriptionCtl:        auth.DeferredRule("SUB on each entry's topic and group (checked per entry)", auth.PermSub),
	remoting.QueryConsumerOffset:        consumerGroupAndTopic,
	remoting.UpdateConsumerOffset:       consumerGroupAndTopic,
	remoting.GetMaxOffset:               topicOnly,
	remoting.GetMinOffset:               topicOnly,
	remoting.SearchOffsetByTimestamp:    topicOnly,
	remoting.GetEarliestMsgStoretime:    topicOnly,
	remoting.QueryMessage:               topicOnly,
	remoting.ViewMessageByID:            auth.DeferredRule("SUB on the message's topic (checked once it is read)", auth.PermSub),
	remoting.ConsumerSendMsgBack: {Doc: "SUB on group, and SUB on the message's topic (checked once it is read)",
		Needs: func(cmd *remoting.Command) auth.Needs {
			n := auth.FieldRule("", subGroup("group")).Needs(cmd)
			n.Deferred = auth.PermSub
			return n
		}},
	remoting.HeartBeat:              {Doc: "for each consumer in the body: SUB on its group and on each topic it subscribes (producers: signature only)", Needs: heartbeatNeeds},
	remoting.UnregisterClient:       auth.FieldRule("SUB on consumerGroup when given (producers: signature only)", subGroup("consumerGroup")),
	remoting.GetConsumerListByGroup: auth.FieldRule("SUB on group", subGroup("consumerGroup")),
	remoting.LockBatchMQ:            {Doc: "SUB on the body's group and on each queue's topic", Needs: lockNeeds},
	remoting.UnlockBatchMQ:          {Doc: "SUB on the body's group and on each queue's topic", Needs: lockNeeds},
	remoting.CheckClientConfig:      {Doc: "SUB on the body's group and topic", Needs: checkClientNeeds},

	// Views of one resource.
	remoting.GetTopicStatsInfo:           topicOnly,
	remoting.QueryTopicConsumeByWho:      topicOnly,
	remoting.GetTopicConfig:              auth.FieldRule("PUB or SUB on topic", anyTopic),
	remoting.GetConsumeStats:             auth.FieldRule("SUB on group (and topic when given)", subGroup("consumerGroup"), subTopic),
	remoting.GetConsumerConnectionList:   auth.FieldRule("SUB on group", subGroup("consumerGroup")),
	remoting.GetProducerConnectionList:   auth.FieldRule("SUB on group", subGroup("producerGroup")),
	remoting.GetConsumerRunningInfo:      auth.FieldRule("SUB on group", subGroup("consumerGroup")),
	remoting.QueryTopicsByConsumer:       auth.FieldRule("SUB on group", subGroup("group")),
	remoting.QuerySubscriptionByConsumer: auth.FieldRule("SUB on group and topic", subGroup("group"), subTopic),
	remoting.GetSubscriptionGroupConfig:  auth.FieldRule("SUB on group", subGroup("group")),

	// Admin: topics, groups, offsets, broker-wide views and settings.
	remoting.UpdateAndCreateTopic:             auth.Admin,
	remoting.SetMessageRequestMode:            auth.Admin,
	remoting.QueryAssignment:                  auth.DeferredRule("SUB on the body's topic (checked once it is read)", auth.PermSub),
	remoting.UpdateAndCreateTopicList:         auth.Admin,
	remoting.DeleteTopicInBroker:              auth.Admin,
	remoting.GetAllTopicConfig:                auth.Admin,
	remoting.UpdateAndCreateSubscriptionGroup: auth.Admin,
	remoting.UpdateAndCreateGroupList:         auth.Admin,
	remoting.DeleteSubscriptionGroup:          auth.Admin,
	remoting.GetAllSubscriptionGroupConfig:    auth.Admin,
	remoting.InvokeBrokerToResetOffset:        auth.Admin,
	remoting.CloneGroupOffset:                 auth.Admin,
	remoting.ConsumeMessageDirectly:           auth.Admin,
	remoting.GetAllProducerInfo:               auth.Admin,
	remoting.GetSystemTopicListFromBroker:     auth.Admin,
	remoting.GetBrokerRuntimeInfo:             auth.Admin,
	remoting.GetBrokerConfig:                  auth.Admin,
	remoting.UpdateBrokerConfig:               auth.Admin,
	remoting.GetBrokerConsumeStats:            auth.Admin,
	remoting.GetBrokerEpochCache:              auth.Admin,

	// ACL 2.0 users and policies (authadmin.go).
	remoting.AuthCreateUser: auth.Admin,
	remoting.AuthUpdateUser: auth.Admin,
	remoting.AuthDeleteUser: auth.Admin,
	remoting.AuthGetUser:    auth.Admin,
	remoting.AuthListUser:   auth.Admin,
	remoting.AuthCreateACL:  auth.Admin,
	remoting.AuthUpdateACL:  auth.Admin,
	remoting.AuthDeleteACL:  auth.Admin,
	remoting.AuthGetACL:     auth.Admin,
	remoting.AuthListACL:    auth.Admin,
}

// sendRule: PUB on the header's topic (a %RETRY% topic: SUB on its
// group), read as parseSendHeader reads it; a batch's messages all go to
// that topic.
var sendRule = auth.Rule{Doc: "PUB on topic (a %RETRY% topic: SUB on its group)", Needs: func(cmd *remoting.Command) auth.Needs {
	topic := sendTopic(cmd)
	if topic == "" {
		return auth.Needs{}
	}
	return auth.Needs{Resources: []auth.Need{auth.TopicNeed(topic, auth.PermPub)}}
}}

// sendTopic is the topic a send names, by parseSendHeader's rules.
func sendTopic(cmd *remoting.Command) string {
	if cmd.Code == remoting.SendMessageV2 || cmd.Code == remoting.SendBatchMessage || cmd.Code == remoting.SendReplyMessageV2 {
		if _, v1 := cmd.ExtFields["topic"]; !v1 {
			return cmd.Field(v1ToV2["topic"])
		}
	}
	return cmd.Field("topic")
}

// heartbeatNeeds decodes the body as handleHeartbeat does.
func heartbeatNeeds(cmd *remoting.Command) auth.Needs {
	hb, err := clients.ParseHeartbeat(cmd.Body)
	if err != nil {
		return auth.Needs{}
	}
	var n auth.Needs
	for _, cd := range hb.ConsumerDataSet {
		n.Resources = append(n.Resources, auth.GroupNeed(cd.GroupName, auth.PermSub))
		for _, sd := range cd.SubscriptionDataSet {
			n.Resources = append(n.Resources, auth.TopicNeed(sd.Topic, auth.PermSub))
		}
	}
	return n
}

// lockNeeds decodes the body as handleLockBatch does.
func lockNeeds(cmd *remoting.Command) auth.Needs {
	b, err := clients.ParseLockBatch(cmd.Body)
	if err != nil {
		return auth.Needs{}
	}
	n := auth.Needs{Resources: []auth.Need{auth.GroupNeed(b.ConsumerGroup, auth.PermSub)}}
	for _, mq := range b.MQSet {
		n.Resources = append(n.Resources, auth.TopicNeed(mq.Topic, auth.PermSub))
	}
	return n
}

// checkClientNeeds decodes the body as handleCheckClientConfig does.
func checkClientNeeds(cmd *remoting.Command) auth.Needs {
	b, err := clients.ParseCheckClientBody(cmd.Body)
	if err != nil {
		return auth.Needs{}
	}
	n := auth.Needs{Resources: []auth.Need{auth.GroupNeed(b.Group, auth.PermSub)}}
	if s := b.Subscription; s != nil && s.Topic != "" {
		n.Resources = append(n.Resources, auth.TopicNeed(s.Topic, auth.PermSub))
	}
	return n
}

// authorize checks cmd against its rule; nil when the ACL is off or the
// request may go on.
func (r *Router) authorize(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	if r.guard == nil {
		return nil
	}
	if ref := r.guard.Check(c.RemoteAddrPort(), cmd, Permissions.NeedsOf(cmd)); ref != nil {
		return &Refusal{Code: remoting.NoPermission, Remark: ref.Remark}
	}
	return nil
}

// deferredCheck is the second half of a deferred rule: the handler calls
// it with the topic of the message the request names, before it acts.
func (r *Router) deferredCheck(c *netloop.Conn, cmd *remoting.Command, topic string) *Refusal {
	if r.guard == nil {
		return nil
	}
	perm := Permissions.NeedsOf(cmd).Deferred
	if perm == 0 {
		return nil
	}
	if ref := r.guard.CheckDeferred(c.RemoteAddrPort(), cmd, perm, topic); ref != nil {
		return &Refusal{Code: remoting.NoPermission, Remark: ref.Remark}
	}
	return nil
}
