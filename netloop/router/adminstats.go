package router

// GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208),
// GET_EARLIEST_MSG_STORETIME (32). Queue bounds are atomics read here; the
// committed offsets come from the offsets stage and the store times from
// the pull stage (CommitLog reads), chained through their replies.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// queueBounds returns a queue's min and max offsets (0, 0 when it has
// none).
func (r *Router) queueBounds(topic string, queueID int32) (minOff, maxOff int64) {
	if q := r.store.Queues.Lookup(topic, queueID); q != nil {
		return q.MinOffset(), q.MaxOffset()
	}
	return 0, 0
}

// sendBody answers cmd with SUCCESS and the encoded body, or SYSTEM_ERROR.
func (r *Router) sendBody(c *netloop.Conn, cmd *remoting.Command, body []byte, err error) {
	if err != nil {
		r.reply(c, cmd, remoting.SystemError, err.Error())
		return
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.Body = body
	r.send(c, cmd, resp)
}

func (r *Router) handleTopicStats(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.TopicStats(callerOf(c, cmd), topic, func(st *broker.TopicStats, err *broker.Error) {
		if err != nil {
			r.answer(c, cmd, err)
			return
		}
		table := make(map[adminbody.MessageQueue]adminbody.TopicOffset, len(st.Queues))
		for _, q := range st.Queues {
			table[r.queue(topic, q.QueueID)] = adminbody.TopicOffset{MinOffset: q.Min, MaxOffset: q.Max,
				LastUpdateTimestamp: q.LastStoreMs}
		}
		body, encErr := adminbody.TopicStatsTable{OffsetTable: table, TopicPutTps: adminbody.Double(st.PutTPS)}.Encode()
		r.sendBody(c, cmd, body, encErr)
	})
	return nil
}

func (r *Router) queue(topic string, id int32) adminbody.MessageQueue {
	return adminbody.MessageQueue{BrokerName: r.cfg.BrokerName, QueueID: id, Topic: topic}
}

func (r *Router) handleConsumeStats(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("consumerGroup")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	var listed []string
	for _, t := range strings.Split(cmd.Field("topicList"), ";") {
		if t = strings.TrimSpace(t); t != "" {
			listed = append(listed, t)
		}
	}
	topics := listed
	if topics == nil && cmd.Field("topic") != "" {
		topics = []string{cmd.Field("topic")}
	}
	r.offsetsSt.Send(&offsets.GroupOffsets{Group: group, Topics: topics, FailFunc: r.failWith(c, cmd),
		Reply: func(committed map[string]map[int32]int64) {
			r.consumeStats(c, cmd, group, committed, listed != nil)
		}})
	return nil
}

// consumeStats builds GET_CONSUME_STATS from the group's committed
// offsets (on the offsets stage), then reads the store times of the last
// consumed messages on the pull stage. Like RocketMQ, a topic not given as
// topicList is skipped when the group is online without subscribing to it,
// and a topic the broker does not have is skipped.
func (r *Router) consumeStats(c *netloop.Conn, cmd *remoting.Command, group string,
	committed map[string]map[int32]int64, listed bool) {
	subscribed := r.subView.Topics(group)
	var topics []string
	for t := range committed {
		if !listed && len(subscribed) > 0 && !slices.Contains(subscribed, t) {
			continue
		}
		if _, ok := r.topicView.Get(t); ok {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	table := map[adminbody.MessageQueue]adminbody.OffsetWrapper{}
	var positions []pull.QueuePos
	snap := r.p.Stats().Load()
	var tps float64
	for _, t := range topics {
		cfg, _ := r.topicView.Get(t)
		for q := range cfg.ReadQueueNums {
			_, maxOff := r.queueBounds(t, q)
			consumer := max(committed[t][q], 0) // absent: 0, as RocketMQ reports it
			table[r.queue(t, q)] = adminbody.OffsetWrapper{BrokerOffset: maxOff, ConsumerOffset: consumer, PullOffset: consumer}
			positions = append(positions, pull.QueuePos{Topic: t, QueueID: q, Offset: consumer - 1})
		}
		tps += snap.GroupGet[stats.GroupTopic{Group: group, Topic: t}]
	}
	r.pullSt.Send(&pull.StoreTimes{Group: group, Positions: positions, FailFunc: r.failWith(c, cmd),
		Reply: func(got []pull.QueueProgress) {
			for i, pr := range got {
				mq := r.queue(positions[i].Topic, positions[i].QueueID)
				w := table[mq]
				w.LastTimestamp = max(pr.StoreTime, 0)
				w.PullOffset = max(w.ConsumerOffset, pr.Pulled)
				table[mq] = w
			}
			body, err := adminbody.ConsumeStats{ConsumeTps: adminbody.Double(tps), OffsetTable: table}.Encode()
			r.sendBody(c, cmd, body, err)
		}})
}

func (r *Router) handleEarliestStoreTime(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	queueID := int32(p.intBits("queueId", true, 0, 32))
	if ref := p.refusal(); ref != nil {
		return ref
	}
	minOff, _ := r.queueBounds(topic, queueID)
	r.pullSt.Send(&pull.StoreTimes{Positions: []pull.QueuePos{{Topic: topic, QueueID: queueID, Offset: minOff}},
		FailFunc: r.failWith(c, cmd), Reply: func(got []pull.QueueProgress) {
			resp := remoting.NewResponse(cmd, remoting.Success, "")
			resp.SetField("timestamp", strconv.FormatInt(got[0].StoreTime, 10))
			r.send(c, cmd, resp)
		}})
	return nil
}
