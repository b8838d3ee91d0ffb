package router

// PEEK_MESSAGE (200052), NOTIFICATION (200054) and POLLING_INFO (200055),
// in RocketMQ 5.3's header layouts (PeekMessageRequestHeader,
// NotificationRequestHeader/ResponseHeader, PollingInfoRequestHeader/
// ResponseHeader), served through the broker API (actors/broker/pop.go).

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func (r *Router) handlePeek(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.intBits("queueId", true, 0, 32))
	maxNums := p.int("maxMsgNums", true, 32)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	nums := int32(max(min(maxNums, broker.MaxPopNums+1), 0))
	r.core.Peek(callerOf(c, cmd), group, topic, queueID, nums, c.ID(), func(res *broker.PeekResult, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		code, remark := remoting.Success, "FOUND"
		if res.Count == 0 {
			code, remark = remoting.PullNotFound, "NO_MESSAGE_IN_QUEUE"
		}
		resp := remoting.NewResponse(cmd, code, remark)
		resp.SetField("restNum", strconv.FormatInt(res.RestNum, 10))
		resp.Body = res.Stored
		r.send(c, cmd, resp)
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
	r.core.Notify(callerOf(c, cmd), group, topic, queueID, poll, c.ID(), func(has bool, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("hasMsg", strconv.FormatBool(has))
		r.send(c, cmd, resp)
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
	r.core.PollingInfo(callerOf(c, cmd), group, topic, queueID, func(n int, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("pollingNum", strconv.Itoa(n))
		r.send(c, cmd, resp)
	})
	return nil
}
