package router

// GET_BROKER_CONSUME_STATS (317, mqadmin brokerConsumeStats): every
// group's progress on the broker, RocketMQ's
// AdminBrokerProcessor.fetchAllConsumeStatsInBroker: per group, one
// ConsumeStats per topic it has offsets for (a topic the broker does not
// have, one its online consumers do not subscribe to, and with isOrder a
// topic that is not orderly, left out), over the topic's write queues,
// and the total lag.

import (
	"slices"

	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

func (r *Router) handleBrokerConsumeStats(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	orderOnly := parseBool(cmd.Field("isOrder"))
	r.offsetsSt.Send(&offsets.AllGroupOffsets{FailFunc: r.failWith(c, cmd),
		Reply: func(all map[string]map[string]map[int32]int64) { r.brokerConsumeStats(c, cmd, all, orderOnly) }})
	return nil
}

func (r *Router) brokerConsumeStats(c *netloop.Conn, cmd *remoting.Command, all map[string]map[string]map[int32]int64, orderOnly bool) {
	type slot struct{ group, topic int } // indexes into list and its Stats
	list := adminbody.ConsumeStatsList{BrokerAddr: r.core.Advertise().String()}
	var positions []pull.QueuePos
	var slots []slot
	snap := r.p.Stats().Load()
	groupNames := make([]string, 0, len(all))
	for g := range all {
		if _, ok := r.groupView.Get(g); ok {
			groupNames = append(groupNames, g)
		}
	}
	slices.Sort(groupNames)
	for _, g := range groupNames {
		subscribed := r.subView.Topics(g)
		topics := make([]string, 0, len(all[g]))
		for t := range all[g] {
			cfg, ok := r.topicView.Get(t)
			switch {
			case !ok, orderOnly && !cfg.Order, len(subscribed) > 0 && !slices.Contains(subscribed, t):
				continue
			}
			topics = append(topics, t)
		}
		slices.Sort(topics)
		entry := adminbody.GroupConsumeStats{Group: g}
		for _, t := range topics {
			cfg, _ := r.topicView.Get(t)
			cs := adminbody.ConsumeStats{OffsetTable: map[adminbody.MessageQueue]adminbody.OffsetWrapper{},
				ConsumeTps: adminbody.Double(snap.GroupGet[stats.GroupTopic{Group: g, Topic: t}])}
			for q := range cfg.WriteQueueNums {
				_, maxOff := r.queueBounds(t, q)
				consumer := max(all[g][t][q], 0)
				cs.OffsetTable[r.queue(t, q)] = adminbody.OffsetWrapper{BrokerOffset: maxOff, ConsumerOffset: consumer, PullOffset: consumer}
				list.TotalDiff += maxOff - consumer
				positions = append(positions, pull.QueuePos{Topic: t, QueueID: q, Offset: consumer - 1})
				slots = append(slots, slot{len(list.ConsumeStatsList), len(entry.Stats)})
			}
			entry.Stats = append(entry.Stats, cs)
		}
		list.ConsumeStatsList = append(list.ConsumeStatsList, entry)
	}
	r.pullSt.Send(&pull.StoreTimes{Positions: positions, FailFunc: r.failWith(c, cmd),
		Reply: func(got []pull.QueueProgress) {
			for i, pr := range got {
				s := slots[i]
				cs := list.ConsumeStatsList[s.group].Stats[s.topic]
				mq := r.queue(positions[i].Topic, positions[i].QueueID)
				w := cs.OffsetTable[mq]
				w.LastTimestamp = max(pr.StoreTime, 0)
				cs.OffsetTable[mq] = w
			}
			body, err := list.Encode()
			r.sendBody(c, cmd, body, err)
		}})
}
