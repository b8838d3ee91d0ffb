package router

// QUERY_ASSIGNMENT (400): a consumer that lets the broker balance (the
// Java push consumer with setClientRebalance(false)) asks which queues of a
// topic it reads and in which mode, as RocketMQ's QueryAssignmentProcessor
// answers: the mode set by 401 (default PULL; retry topics always PULL);
// BROADCASTING: every queue; CLUSTERING in POP mode: the whole topic as one
// queue -1 (every consumer pops every queue: popShareQueueNum 0);
// CLUSTERING in PULL mode: the queues the strategy (AVG or AVG_BY_CIRCLE)
// gives this client among the group's consumers. An unknown topic, an
// unknown strategy or a client the broker does not know answers
// SUCCESS with no assignment list (null: "skip this update"), as RocketMQ.

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// queryAssignmentBody is RocketMQ's QueryAssignmentRequestBody.
type queryAssignmentBody struct {
	Topic         string `json:"topic"`
	ConsumerGroup string `json:"consumerGroup"`
	ClientID      string `json:"clientId"`
	StrategyName  string `json:"strategyName"`
	MessageModel  string `json:"messageModel"`
}

// assignedQueue is RocketMQ's MessageQueue in JSON.
type assignedQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// queueAssignment is RocketMQ's MessageQueueAssignment.
type queueAssignment struct {
	MessageQueue assignedQueue     `json:"messageQueue"`
	Mode         string            `json:"mode"`
	Attachments  map[string]string `json:"attachments"`
}

// Allocation strategies of QUERY_ASSIGNMENT (RocketMQ's names).
const (
	strategyAverage       = "AVG"
	strategyAverageCircle = "AVG_BY_CIRCLE"
)

func (r *Router) handleQueryAssignment(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	var body queryAssignmentBody
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.InvalidParameter, "body is not a QueryAssignmentRequestBody: %v", err)
	}
	if ref := r.deferredCheck(c, cmd, body.Topic); ref != nil {
		return ref
	}
	mode := r.core.RequestMode(body.ConsumerGroup, body.Topic)
	if mode == "" || strings.HasPrefix(body.Topic, meta.RetryGroupTopicPrefix) {
		mode = ModePull
	}
	answer := func(queues []assignedQueue) {
		var out struct {
			Assignments []queueAssignment `json:"messageQueueAssignments"`
		}
		if queues != nil {
			out.Assignments = make([]queueAssignment, 0, len(queues))
			for _, q := range queues {
				out.Assignments = append(out.Assignments, queueAssignment{MessageQueue: q, Mode: mode, Attachments: map[string]string{}})
			}
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.Body, _ = json.Marshal(out)
		r.send(c, cmd, resp)
	}
	cfg, ok := r.topicView.Get(body.Topic)
	if !ok {
		answer(nil)
		return nil
	}
	all := make([]assignedQueue, 0, cfg.ReadQueueNums)
	for q := range cfg.ReadQueueNums {
		all = append(all, assignedQueue{Topic: body.Topic, BrokerName: r.cfg.BrokerName, QueueID: q})
	}
	switch {
	case body.MessageModel == "BROADCASTING":
		answer(all)
		return nil
	case mode == ModePop:
		answer([]assignedQueue{{Topic: body.Topic, BrokerName: r.cfg.BrokerName, QueueID: -1}})
		return nil
	}
	strategy := body.StrategyName
	if strategy != strategyAverage && strategy != strategyAverageCircle {
		r.log.Warn().Str("group", body.ConsumerGroup).Str("strategy", strategy).Str("remote", c.RemoteAddr()).
			Msg("query assignment: unsupported strategy")
		answer(nil)
		return nil
	}
	r.clientsSt.Send(&clients.ListConsumers{Group: body.ConsumerGroup, FailFunc: r.failWith(c, cmd), Reply: func(ids []string) {
		if len(ids) == 0 {
			answer(nil)
			return
		}
		ids = slices.Clone(ids)
		slices.Sort(ids)
		answer(allocateQueues(strategy, all, ids, body.ClientID))
	}})
	return nil
}

// allocateQueues is RocketMQ's AllocateMessageQueueAveragely (AVG) or
// AllocateMessageQueueAveragelyByCircle (AVG_BY_CIRCLE): the queues of
// all that client gets among ids (sorted); none for a client not in ids.
func allocateQueues(strategy string, all []assignedQueue, ids []string, client string) []assignedQueue {
	index := slices.Index(ids, client)
	out := []assignedQueue{}
	if index < 0 || len(all) == 0 {
		return out
	}
	n, m := len(all), len(ids)
	if strategy == strategyAverageCircle {
		for i := index; i < n; i += m {
			out = append(out, all[i])
		}
		return out
	}
	mod := n % m
	size := n / m
	if n <= m {
		size = 1
	} else if mod > 0 && index < mod {
		size++
	}
	start := index*size + mod
	if mod > 0 && index < mod {
		start = index * size
	}
	for i := range min(size, n-start) {
		out = append(out, all[(start+i)%n])
	}
	return out
}
