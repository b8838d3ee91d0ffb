package router

// GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204),
// QUERY_TOPIC_CONSUME_BY_WHO (300),
// GET_CONSUMER_RUNNING_INFO (307, relayed to the client),
// INVOKE_BROKER_TO_RESET_OFFSET (222, announced to the group's consumers
// with RESET_CONSUMER_CLIENT_OFFSET, 220).

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// clientCallTimeout bounds a request relayed to a client (RocketMQ's
// Broker2Client.callClient waits 10 s).
const clientCallTimeout = 10 * time.Second

func (r *Router) handleConsumerConnections(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("consumerGroup")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.ConsumerConnections(callerOf(c, cmd), group, func(cc *broker.Connections, err *broker.Error) {
		switch {
		case err != nil:
			r.answer(c, cmd, err)
		case !cc.Online:
			r.refuse(c, cmd, refuse(remoting.ConsumerNotOnline, "the consumer group[%s] not online", group))
		default:
			body, encErr := cc.Body.Encode()
			r.sendBody(c, cmd, body, encErr)
		}
	})
	return nil
}

func (r *Router) handleProducerConnections(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("producerGroup")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.clientsSt.Send(&clients.ProducerConnection{Group: group, FailFunc: r.failWith(c, cmd),
		Reply: func(pc adminbody.ProducerConnection, found bool) {
			if !found {
				r.refuse(c, cmd, refuse(remoting.SystemError, "the producer group[%s] not exist", group))
				return
			}
			body, err := pc.Encode()
			r.sendBody(c, cmd, body, err)
		}})
	return nil
}

// handleConsumerRunningInfo relays the request to the client, as RocketMQ's
// callConsumer does, and relays its answer (ConsumerRunningInfo JSON) back.
func (r *Router) handleConsumerRunningInfo(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, clientID := p.str("consumerGroup"), p.str("clientId")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	fwd := clients.Relay{RequestCode: remoting.GetConsumerRunningInfo, Fields: cmd.ExtFields, Body: cmd.Body}
	r.clientsSt.Send(&clients.Invoke{Group: group, ClientID: clientID, Request: fwd, Timeout: clientCallTimeout,
		Reply: func(answer clients.Answer, err error) { r.relayClientAnswer(c, cmd, group, clientID, answer, err) }})
	return nil
}

// handleResetOffset serves INVOKE_BROKER_TO_RESET_OFFSET (broker.ResetOffsets):
// the group's offsets of the topic's queues move to the first message
// stored at or after timestamp (-1: the end), or to offset for one queue.
// The answer lists the new offsets; the group's consumers are told by
// announceReset, which the API calls after every reset (console's too).
func (r *Router) handleResetOffset(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	req := broker.ResetRequest{Topic: p.str("topic"), Group: p.str("group"), Timestamp: p.int("timestamp", true, 0),
		QueueID: int32(p.intBits("queueId", false, -1, 32)), Offset: p.int("offset", false, -1)}
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.ResetOffsets(callerOf(c, cmd), req, func(offs map[int32]int64, err *broker.Error) {
		if err != nil {
			r.answer(c, cmd, err)
			return
		}
		body, encErr := r.resetBody(req.Topic, offs)
		r.sendBody(c, cmd, body, encErr)
	})
	return nil
}

// resetBody is the ResetOffsetBody of new offsets.
func (r *Router) resetBody(topic string, offs map[int32]int64) ([]byte, error) {
	body := adminbody.ResetOffsetBody{OffsetTable: make(map[adminbody.MessageQueue]int64, len(offs))}
	for q, off := range offs {
		body.OffsetTable[r.queue(topic, q)] = off
	}
	return body.Encode()
}

// announceReset tells the group's live consumers of a reset at once, as
// RocketMQ's Broker2Client.resetOffset does: RESET_CONSUMER_CLIENT_OFFSET
// (220, oneway) with the new offsets in body, to each of them; and the long
// polls they have parked on those queues are answered now (OFFSET_MOVED,
// through the broker API's reset rule) instead of when their suspension ends. A consumer
// that misses the 220 still meets the reset at its next pull.
func (r *Router) announceReset(d broker.ResetDone) {
	group, topic, offs := d.Group, d.Topic, d.Offsets
	body, err := r.resetBody(topic, offs)
	if err != nil {
		r.log.Error().Err(err).Str("group", group).Str("topic", topic).Msg("offset reset not announced")
		return
	}
	req := clients.ResetOffset{Topic: topic, Group: group, Timestamp: d.Timestamp, Body: body}
	r.clientsSt.Send(&clients.NotifyGroup{Group: group, Request: req, Reply: func(sent []string) {
		r.log.Info().Str("group", group).Str("topic", topic).Strs("clients", sent).
			Msg("offset reset sent to the group's consumers")
	}})
	queues := make([]int32, 0, len(offs))
	for q := range offs {
		queues = append(queues, q)
	}
	r.core.WakeResetPulls(group, topic, queues)
}

// parseBool reads a Java boolean header field ("true" in any case).
func parseBool(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// handleTopicConsumeByWho serves QUERY_TOPIC_CONSUME_BY_WHO (300, mqadmin
// queryMsgById and messageTrackDetail): the groups whose online consumers
// subscribe to the topic, with those that have committed offsets for it,
// as RocketMQ's body GroupList {"groupList":[...]}. Whether a group
// consumed a given message the tools then learn from GET_CONSUME_STATS.
func (r *Router) handleTopicConsumeByWho(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.TopicConsumers(callerOf(c, cmd), topic, func(groups []string, err *broker.Error) {
		if err != nil {
			r.answer(c, cmd, err)
			return
		}
		body, encErr := json.Marshal(struct {
			GroupList []string `json:"groupList"`
		}{groups})
		r.sendBody(c, cmd, body, encErr)
	})
	return nil
}
