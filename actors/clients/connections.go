package clients

import (
	"sort"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// ConsumerConnection answers GET_CONSUMER_CONNECTION_LIST: the group's
// connections and subscriptions; online is false when no member is
// connected (RocketMQ: CONSUMER_NOT_ONLINE).
type ConsumerConnection struct {
	Group string
	Reply func(cc adminbody.ConsumerConnection, online bool)
	stage.FailFunc
}

// AllProducers answers GET_ALL_PRODUCER_INFO: every producer group with
// its live clients, sorted by client id.
type AllProducers struct {
	Reply func(adminbody.ProducerTableInfo)
	stage.FailFunc
}

// Subscription answers a group's subscription to a topic as its online
// members registered it (QUERY_SUBSCRIPTION_BY_CONSUMER); found is false
// when none of them subscribes to it.
type SubscriptionOf struct {
	Group string
	Topic string
	Reply func(sd adminbody.SubscriptionData, found bool)
	stage.FailFunc
}

// ProducerConnection answers GET_PRODUCER_CONNECTION_LIST; found is false
// when no client of the producer group is connected.
type ProducerConnection struct {
	Group string
	Reply func(pc adminbody.ProducerConnection, found bool)
	stage.FailFunc
}

func (c *client) connection() adminbody.Connection {
	return adminbody.Connection{ClientAddr: c.addr, ClientID: c.id, Language: c.language, Version: c.version}
}

// consumerConnection takes the group's consume type, model and start
// position from its most recent heartbeat, as RocketMQ's ConsumerGroupInfo
// does, and merges the members' subscriptions.
func (m *Manager) consumerConnection(q *ConsumerConnection) {
	var cc adminbody.ConsumerConnection
	cc.SubscriptionTable = map[string]adminbody.SubscriptionData{}
	var latest *client
	for _, id := range m.members(q.Group) {
		c := m.clients[id]
		cc.ConnectionSet = append(cc.ConnectionSet, c.connection())
		if latest == nil || c.lastSeen.After(latest.lastSeen) {
			latest = c
		}
		for _, sd := range c.groups[q.Group].SubscriptionDataSet {
			cc.SubscriptionTable[sd.Topic] = subscriptionBody(sd)
		}
	}
	if latest == nil {
		q.Reply(cc, false)
		return
	}
	cd := latest.groups[q.Group]
	cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere = cd.ConsumeType, cd.MessageModel, cd.ConsumeFromWhere
	q.Reply(cc, true)
}

// subscriptionBody converts a heartbeat subscription to Java's shape
// (codeSet as numbers; unparsable codes are left out).
func subscriptionBody(sd SubscriptionData) adminbody.SubscriptionData {
	out := adminbody.SubscriptionData{ClassFilterMode: sd.ClassFilterMode, ExpressionType: sd.ExpressionType,
		SubString: sd.SubString, SubVersion: sd.SubVersion, TagsSet: append([]string{}, sd.TagsSet...), Topic: sd.Topic,
		CodeSet: []int32{}}
	for _, code := range sd.CodeSet {
		if n, err := strconv.ParseInt(code, 10, 32); err == nil {
			out.CodeSet = append(out.CodeSet, int32(n))
		}
	}
	return out
}

func (m *Manager) producerConnection(q *ProducerConnection) {
	var pc adminbody.ProducerConnection
	ids := make([]string, 0, len(m.clients))
	for id, c := range m.clients {
		if _, ok := c.pgroups[q.Group]; ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		pc.ConnectionSet = append(pc.ConnectionSet, m.clients[id].connection())
	}
	q.Reply(pc, len(ids) > 0)
}

func (m *Manager) allProducers(q *AllProducers) {
	t := adminbody.ProducerTableInfo{Data: map[string][]adminbody.ProducerInfo{}}
	ids := make([]string, 0, len(m.clients))
	for id := range m.clients {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := m.clients[id]
		for g := range c.pgroups {
			t.Data[g] = append(t.Data[g], adminbody.ProducerInfo{ClientID: id, RemoteIP: c.addr, Language: c.language,
				Version: c.version, LastUpdateTimestamp: c.lastSeen.UnixMilli()})
		}
	}
	q.Reply(t)
}

func (m *Manager) subscriptionOf(q *SubscriptionOf) {
	var cc adminbody.ConsumerConnection
	m.consumerConnection(&ConsumerConnection{Group: q.Group, Reply: func(c adminbody.ConsumerConnection, _ bool) { cc = c }})
	sd, ok := cc.SubscriptionTable[q.Topic]
	q.Reply(sd, ok)
}
