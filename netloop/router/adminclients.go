package router

// GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204),
// QUERY_TOPIC_CONSUME_BY_WHO (300),
// GET_CONSUMER_RUNNING_INFO (307, relayed to the client),
// INVOKE_BROKER_TO_RESET_OFFSET (222, announced to the group's consumers
// with RESET_CONSUMER_CLIENT_OFFSET, 220).

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
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
		Reply: func(answer *remoting.Command, err error) { r.relayClientAnswer(c, cmd, group, clientID, answer, err) }})
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
		r.applyReset(c, cmd, group, topic, ts, map[int32]int64{queueID: offset})
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
		Reply: func(offs map[int32]int64) { r.applyReset(c, cmd, group, topic, ts, offs) }})
	return nil
}

func (r *Router) applyReset(c *netloop.Conn, cmd *remoting.Command, group, topic string, ts int64, offs map[int32]int64) {
	r.offsetsSt.Send(&offsets.Reset{Group: group, Topic: topic, Offsets: offs, FailFunc: r.failWith(c, cmd),
		Done: func() {
			body := adminbody.ResetOffsetBody{OffsetTable: make(map[adminbody.MessageQueue]int64, len(offs))}
			for q, off := range offs {
				body.OffsetTable[r.queue(topic, q)] = off
			}
			enc, err := body.Encode()
			r.sendBody(c, cmd, enc, err)
			if err == nil {
				r.announceReset(group, topic, ts, offs, enc)
			}
		}})
}

// announceReset tells the group's live consumers of a reset at once, as
// RocketMQ's Broker2Client.resetOffset does: RESET_CONSUMER_CLIENT_OFFSET
// (220, oneway) with the new offsets in body, to each of them; and the long
// polls they have parked on those queues are answered now (OFFSET_MOVED,
// through submitPull) instead of when their suspension ends. A consumer
// that misses the 220 still meets the reset at its next pull.
func (r *Router) announceReset(group, topic string, ts int64, offs map[int32]int64, body []byte) {
	req := remoting.NewRequest(remoting.ResetConsumerClientOffset, map[string]string{
		"topic": topic, "group": group, "queueId": "-1",
		"timestamp": strconv.FormatInt(ts, 10), "isForce": "false",
	}, body)
	r.clientsSt.Send(&clients.NotifyGroup{Group: group, Request: req, Reply: func(sent []string) {
		r.log.Info().Str("group", group).Str("topic", topic).Strs("clients", sent).
			Msg("offset reset sent to the group's consumers")
	}})
	queues := make([]int32, 0, len(offs))
	for q := range offs {
		queues = append(queues, q)
	}
	r.pullSt.Send(&pull.Unpark{Group: group, Topic: topic, Queues: queues, Each: r.submitPull})
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
	online := r.subView.GroupsOf(topic)
	r.offsetsSt.Send(&offsets.TopicGroups{Topic: topic, FailFunc: r.failWith(c, cmd), Reply: func(committed []string) {
		body, err := json.Marshal(struct {
			GroupList []string `json:"groupList"`
		}{mergeSorted(online, committed)})
		r.sendBody(c, cmd, body, err)
	}})
	return nil
}

// mergeSorted returns the sorted union of two sorted lists.
func mergeSorted(a, b []string) []string {
	out := append(append(make([]string, 0, len(a)+len(b)), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
