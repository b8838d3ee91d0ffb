package router

// PEEK_MESSAGE (200052), NOTIFICATION (200054) and POLLING_INFO (200055),
// in RocketMQ 5.3's header layouts (PeekMessageRequestHeader,
// NotificationRequestHeader/ResponseHeader, PollingInfoRequestHeader/
// ResponseHeader), served by the pop stage (actors/pop/peek.go).

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// popQueues checks a POP-family request's topic and queue as RocketMQ's
// processors do and returns the topic's queue count.
func (r *Router) popQueues(c *netloop.Conn, topic string, queueID int32) (int32, *Refusal) {
	cfg, ok := r.topicView.Get(topic)
	if !ok {
		return 0, refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if cfg.Perm&meta.PermRead == 0 {
		return 0, refuse(remoting.NoPermission, "the topic[%s] peeking message is forbidden", topic)
	}
	queues := max(cfg.ReadQueueNums, cfg.WriteQueueNums)
	if queueID < -1 || queueID >= queues {
		return 0, refuse(remoting.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			queueID, topic, cfg.ReadQueueNums, c.RemoteAddr())
	}
	return queues, nil
}

func (r *Router) handlePeek(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.intBits("queueId", true, 0, 32))
	maxNums := p.int("maxMsgNums", true, 32)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	queues, ref := r.popQueues(c, topic, queueID)
	if ref != nil {
		return ref
	}
	if maxNums <= 0 || maxNums > 32 {
		return refuse(remoting.InvalidParameter, "the broker[%s] peek message's num is greater than 32", r.cfg.BrokerName)
	}
	if ref := r.consumeAllowed(group); ref != nil {
		return ref
	}
	all, err := r.filters.Get("TAG", "*", 0)
	if err != nil {
		return refuse(remoting.SystemError, "peek filter: %v", err)
	}
	r.popStage().Send(&pop.Pop{
		Group: group, Topic: topic, QueueID: queueID, Queues: queues, MaxNums: int(maxNums), Filter: all,
		Mode: pop.ModePeek, ConnID: c.ID(), FailFunc: r.failWith(c, cmd),
		Reply: func(res *pop.Result) {
			resp := remoting.NewResponse(cmd, res.Code, res.Remark)
			resp.SetField("restNum", strconv.FormatInt(res.RestNum, 10))
			resp.Body = res.Body
			r.send(c, cmd, resp)
		},
	})
	return nil
}

func (r *Router) handleNotification(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.intBits("queueId", true, 0, 32))
	poll := time.Duration(p.int("pollTime", false, 0)) * time.Millisecond
	if ref := p.refusal(); ref != nil {
		return ref
	}
	queues, ref := r.popQueues(c, topic, queueID)
	if ref != nil {
		return ref
	}
	if ref := r.consumeAllowed(group); ref != nil {
		return ref
	}
	var until time.Time
	if poll = min(poll, maxPopPoll); poll > 0 {
		until = time.Now().Add(poll)
	}
	r.popStage().Send(&pop.Pop{
		Group: group, Topic: topic, QueueID: queueID, Queues: queues, MaxNums: 1, PollUntil: until,
		Mode: pop.ModeNotify, ConnID: c.ID(), FailFunc: r.failWith(c, cmd),
		Reply: func(res *pop.Result) {
			code, remark := res.Code, res.Remark
			if code == pop.CodeNoMessage || code == pop.CodePollingTimeout {
				code, remark = remoting.Success, ""
			}
			resp := remoting.NewResponse(cmd, code, remark)
			if code == remoting.Success {
				resp.SetField("hasMsg", strconv.FormatBool(res.Code == pop.CodeSuccess))
			}
			r.send(c, cmd, resp)
		},
	})
	return nil
}

func (r *Router) handlePollingInfo(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.intBits("queueId", true, 0, 32))
	if ref := p.refusal(); ref != nil {
		return ref
	}
	if _, ref := r.popQueues(c, topic, queueID); ref != nil {
		return ref
	}
	if ref := r.consumeAllowed(group); ref != nil {
		return ref
	}
	r.popStage().Send(&pop.PollingInfo{Group: group, Topic: topic, QueueID: queueID, Reply: func(n int) {
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("pollingNum", strconv.Itoa(n))
		r.send(c, cmd, resp)
	}})
	return nil
}
