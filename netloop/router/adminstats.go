package router

// GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208),
// GET_EARLIEST_MSG_STORETIME (32). Queue bounds are atomics read here; the
// committed offsets come from the offsets stage and the store times from
// the pull stage (CommitLog reads), chained through their replies.

import (
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pull"
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
	req := broker.ConsumeStatsRequest{Group: p.str("consumerGroup")}
	if ref := p.refusal(); ref != nil {
		return ref
	}
	for _, t := range strings.Split(cmd.Field("topicList"), ";") {
		if t = strings.TrimSpace(t); t != "" {
			req.Topics = append(req.Topics, t)
		}
	}
	req.Listed = req.Topics != nil
	if req.Topics == nil && cmd.Field("topic") != "" {
		req.Topics = []string{cmd.Field("topic")}
	}
	r.core.ConsumeStats(callerOf(c, cmd), req, func(st *broker.ConsumeStats, err *broker.Error) {
		if err != nil {
			r.answer(c, cmd, err)
			return
		}
		table := make(map[adminbody.MessageQueue]adminbody.OffsetWrapper, len(st.Queues))
		for _, q := range st.Queues {
			table[r.queue(q.Topic, q.QueueID)] = adminbody.OffsetWrapper{BrokerOffset: q.BrokerOffset,
				ConsumerOffset: q.ConsumerOffset, PullOffset: q.PullOffset, LastTimestamp: q.LastTimestamp}
		}
		body, encErr := adminbody.ConsumeStats{ConsumeTps: adminbody.Double(st.TPS), OffsetTable: table}.Encode()
		r.sendBody(c, cmd, body, encErr)
	})
	return nil
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
