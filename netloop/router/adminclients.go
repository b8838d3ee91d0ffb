package router

// GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204),
// GET_CONSUMER_RUNNING_INFO (307, relayed to the client),
// INVOKE_BROKER_TO_RESET_OFFSET (222).

import (
	"errors"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/netloop/remoting/adminbody"
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
	r.clientsSt.Send(&clients.ConsumerConnection{Group: group, FailFunc: r.failWith(c, cmd),
		Reply: func(cc adminbody.ConsumerConnection, online bool) {
			if !online {
				r.refuse(c, cmd, refuse(remoting.ConsumerNotOnline, "the consumer group[%s] not online", group))
				return
			}
			body, err := cc.Encode()
			r.sendBody(c, cmd, body, err)
		}})
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
	fwd := remoting.NewRequest(remoting.GetConsumerRunningInfo, cmd.ExtFields, cmd.Body)
	r.clientsSt.Send(&clients.Invoke{Group: group, ClientID: clientID, Request: fwd, Timeout: clientCallTimeout,
		Reply: func(answer *remoting.Command, err error) {
			switch {
			case errors.Is(err, clients.ErrNotOnline):
				r.refuse(c, cmd, refuse(remoting.SystemError, "The Consumer <%s> <%s> not online", group, clientID))
			case errors.Is(err, clients.ErrCallTimeout):
				r.refuse(c, cmd, refuse(remoting.ConsumeMsgTimeout, "consumer <%s> <%s> Timeout: %v", group, clientID, err))
			case err != nil:
				r.refuse(c, cmd, refuse(remoting.SystemError, "invoke consumer <%s> <%s> Exception: %v", group, clientID, err))
			default:
				resp := remoting.NewResponse(cmd, answer.Code, answer.Remark)
				resp.ExtFields, resp.Body = answer.ExtFields, answer.Body
				r.send(c, cmd, resp)
			}
		}})
	return nil
}

// handleResetOffset serves INVOKE_BROKER_TO_RESET_OFFSET the way RocketMQ 5
// does by default (useServerSideResetOffset): the group's offsets of the
// topic's queues move to the first message stored at or after timestamp
// (-1: the end), or to offset for one queue; the next pull of each queue
// gets OFFSET_MOVED to it. The answer lists the new offsets.
func (r *Router) handleResetOffset(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic, group := p.str("topic"), p.str("group")
	ts := p.int("timestamp", true, 0)
	queueID := int32(p.intBits("queueId", false, -1, 32))
	offset := p.int("offset", false, -1)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	cfg, ok := r.topicView.Get(topic)
	if !ok {
		return refuse(remoting.TopicNotExist, "Topic %s does not exist", topic)
	}
	if _, ok := r.groupView.Get(group); !ok {
		return refuse(remoting.SubscriptionGroupNotExist, "Group %s does not exist", group)
	}
	if queueID >= 0 && offset != -1 {
		minOff, maxOff := r.queueBounds(topic, queueID)
		if offset < minOff || offset > maxOff {
			return refuse(remoting.SystemError, "Target offset %d not in consume queue range [%d-%d]", offset, minOff, maxOff)
		}
		r.applyReset(c, cmd, group, topic, map[int32]int64{queueID: offset})
		return nil
	}
	queues := []int32{queueID}
	if queueID < 0 {
		queues = make([]int32, cfg.ReadQueueNums)
		for i := range queues {
			queues[i] = int32(i)
		}
	}
	if len(queues) == 0 {
		return refuse(remoting.SystemError, "No queues to reset.")
	}
	r.pullSt.Send(&pull.SearchQueues{Topic: topic, Queues: queues, Timestamp: ts, FailFunc: r.failWith(c, cmd),
		Reply: func(offs map[int32]int64) { r.applyReset(c, cmd, group, topic, offs) }})
	return nil
}

func (r *Router) applyReset(c *netloop.Conn, cmd *remoting.Command, group, topic string, offs map[int32]int64) {
	r.offsetsSt.Send(&offsets.Reset{Group: group, Topic: topic, Offsets: offs, FailFunc: r.failWith(c, cmd),
		Done: func() {
			body := adminbody.ResetOffsetBody{OffsetTable: make(map[adminbody.MessageQueue]int64, len(offs))}
			for q, off := range offs {
				body.OffsetTable[r.queue(topic, q)] = off
			}
			enc, err := body.Encode()
			r.sendBody(c, cmd, enc, err)
		}})
}

// parseBool reads a Java boolean header field ("true" in any case).
func parseBool(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }
