package router

// PULL_MESSAGE (11), LITE_PULL_MESSAGE (361, served alike) and the offset
// family: QUERY_CONSUMER_OFFSET (14),
// UPDATE_CONSUMER_OFFSET (15), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31),
// SEARCH_OFFSET_BY_TIMESTAMP (29).

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// handlePull decodes a pull, hands it to the broker API (actors/broker
// pull.go, which holds the rules) and encodes its answer.
func (r *Router) handlePull(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	req := broker.PullRequest{
		Group: p.str("consumerGroup"), Topic: p.str("topic"), QueueID: int32(p.int("queueId", true, 0)),
		Offset: p.int("queueOffset", true, 0), MaxNums: int32(p.int("maxMsgNums", true, 32)),
		SysFlag: int32(p.int("sysFlag", true, 0)), CommitOffset: p.int("commitOffset", true, -1),
		Suspend:        time.Duration(p.int("suspendTimeoutMillis", false, 0)) * time.Millisecond,
		ExpressionType: cmd.Field("expressionType"), Expression: cmd.Field("subscription"),
		ConnID: c.ID(), Busy: connStateOf(c).busy,
	}
	if ref := p.refusal(); ref != nil {
		return ref
	}
	req.SubVersion, _ = strconv.ParseInt(cmd.Field("subVersion"), 10, 64)
	return refusalOf(r.core.Pull(callerOf(c, cmd), req, func(res broker.PullResult) {
		if err := broker.PullRefusal(res); err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		r.send(c, cmd, pullResponse(cmd, &res))
	}))
}

// pullCodes maps a served pull's outcome to its response code.
var pullCodes = map[pull.Outcome]int32{
	pull.Found:            remoting.Success,
	pull.NoNewMessage:     remoting.PullNotFound,
	pull.OffsetMoved:      remoting.PullOffsetMoved,
	pull.RetryImmediately: remoting.PullRetryImmediately,
}

// pullResponse encodes a pull's answer. suggestWhichBrokerId is always 0
// (MASTER_ID), as RocketMQ's PullMessageProcessor answers without
// slaveReadEnable: under replication a replica serves the pulls that
// reach it (confirmed data only: the dispatcher builds its consume queues
// up to the confirmed offset) and the suggestion sends the consumer back
// to the master once its route has one (docs/operations.md, "Replicated
// broker groups").
func pullResponse(cmd *remoting.Command, res *broker.PullResult) *remoting.Command {
	code, ok := pullCodes[res.Outcome]
	if !ok {
		code = remoting.SystemError
	}
	resp := remoting.NewResponse(cmd, code, res.Remark)
	resp.Body = res.Body
	if res.HasOffsets() {
		resp.SetField("nextBeginOffset", strconv.FormatInt(res.Next, 10))
		resp.SetField("minOffset", strconv.FormatInt(res.Min, 10))
		resp.SetField("maxOffset", strconv.FormatInt(res.Max, 10))
		resp.SetField("suggestWhichBrokerId", "0")
	}
	return resp
}

func (r *Router) handleQueryOffset(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.ConsumerOffset(callerOf(c, cmd), group, broker.QueueRef{Topic: topic, QueueID: queueID}, func(off int64, err *broker.Error) {
		if err != nil {
			r.reply(c, cmd, wireCode(err.Status), err.Remark)
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("offset", strconv.FormatInt(off, 10))
		r.send(c, cmd, resp)
	})
	return nil
}

func (r *Router) handleUpdateOffset(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	off := p.int("commitOffset", true, 0)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	if err := r.core.CommitOffset(callerOf(c, cmd), group, broker.QueueRef{Topic: topic, QueueID: queueID}, off); err != nil {
		return refusalOf(err)
	}
	r.reply(c, cmd, remoting.Success, "")
	return nil
}

// handleQueueBounds answers GET_MAX_OFFSET / GET_MIN_OFFSET.
func (r *Router) handleQueueBounds(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	if ref := p.refusal(); ref != nil {
		return ref
	}
	minOff, off, err := r.core.QueueBounds(callerOf(c, cmd), broker.QueueRef{Topic: topic, QueueID: queueID})
	if err != nil {
		return refusalOf(err)
	}
	if cmd.Code != remoting.GetMaxOffset {
		off = minOff
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	resp.SetField("offset", strconv.FormatInt(off, 10))
	r.send(c, cmd, resp)
	return nil
}

func (r *Router) handleSearchOffset(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	ts := p.int("timestamp", true, 0)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.OffsetAt(callerOf(c, cmd), broker.QueueRef{Topic: topic, QueueID: queueID}, ts, func(off int64, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("offset", strconv.FormatInt(off, 10))
		r.send(c, cmd, resp)
	})
	return nil
}
