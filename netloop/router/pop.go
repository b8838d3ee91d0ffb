package router

// The POP family (actors/pop): POP_MESSAGE (200050), ACK_MESSAGE (200051),
// CHANGE_MESSAGE_INVISIBLETIME (200053) and BATCH_ACK_MESSAGE (200151)
// (PEEK, NOTIFICATION and POLLING_INFO: popinfo.go), in
// RocketMQ 5.3's header layouts (PopMessageRequestHeader, ...).

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// maxPopPoll caps a pop's pollTime.
const maxPopPoll = 60 * time.Second

// maxPopInvisible bounds a pop's invisibleTime (its deadline is a timer
// on the wheel; RocketMQ's proxy allows 12 h to gRPC clients).
const maxPopInvisible = 30 * 24 * time.Hour

// checkInvisible refuses an invisibleTime outside [0, maxPopInvisible].
func checkInvisible(ms int64) *Refusal {
	if ms < 0 || ms > maxPopInvisible.Milliseconds() {
		return refuse(remoting.InvalidParameter, "invisibleTime %d is illegal: it must be within [0, %d] ms", ms,
			maxPopInvisible.Milliseconds())
	}
	return nil
}

func (r *Router) popStage() interface{ Send(any) } { return r.p.Stage(pop.StageName) }

func (r *Router) handlePop(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	h, ref := parsePopHeader(cmd)
	if ref != nil {
		return ref
	}
	group, topic, queueID, maxNums, invisible, poll, initMode := h.Group, h.Topic, h.QueueID, h.MaxNums, h.InvisibleMs, h.Poll, h.InitMode
	queues, ref := r.popQueues(c, topic, queueID)
	if ref != nil {
		return ref
	}
	if maxNums <= 0 || maxNums > 32 {
		return refuse(remoting.InvalidParameter, "the broker[%s] pop message's num is greater than 32", r.cfg.BrokerName)
	}
	if ref := checkInvisible(invisible); ref != nil {
		return ref
	}
	if ref := r.consumeAllowed(group); ref != nil {
		return ref
	}
	if ref := refusalOf(r.core.PopAllowed(group, topic)); ref != nil {
		return ref
	}
	filter, err := r.filters.Get(h.ExpType, h.Exp, 0)
	if err != nil {
		return refuse(remoting.SubscriptionParseFailed, "parse the consumer's subscription failed")
	}
	// FIFO per message group (actors/pop/fifo.go): the group is orderly
	// (consumeMessageOrderly, as the gRPC proxy asks order=fifo from it) or
	// the request asks order=true.
	orderly := cmd.Field("order") == "true"
	if g, err := r.groupConfig(group); err == nil && g.ConsumeMessageOrderly {
		orderly = true
	}
	poll = min(poll, maxPopPoll)
	var until time.Time
	if poll > 0 {
		until = time.Now().Add(poll)
	}
	r.popStage().Send(&pop.Pop{
		Group: group, Topic: topic, QueueID: queueID, Queues: queues, MaxNums: int(maxNums), InvisibleMs: invisible,
		PollUntil: until, Filter: filter, InitMode: initMode, Orderly: orderly, ConnID: c.ID(), FailFunc: r.failWith(c, cmd),
		Reply: func(res *pop.Result) {
			resp := remoting.NewResponse(cmd, res.Code, res.Remark)
			resp.SetField("popTime", strconv.FormatInt(res.PopTime, 10))
			resp.SetField("invisibleTime", strconv.FormatInt(res.InvisibleTime, 10))
			resp.SetField("reviveQid", "0")
			resp.SetField("restNum", strconv.FormatInt(res.RestNum, 10))
			if res.StartOffsetInfo != "" {
				resp.SetField("startOffsetInfo", res.StartOffsetInfo)
				resp.SetField("msgOffsetInfo", res.MsgOffsetInfo)
			}
			resp.Body = res.Body
			r.send(c, cmd, resp)
		},
	})
	return nil
}

func (r *Router) handleAck(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	h, ref := parseAckHeader(cmd, false)
	if ref != nil {
		return ref
	}
	group, topic, extra, queueID, offset := h.Group, h.Topic, h.ExtraInfo, h.QueueID, h.Offset
	if _, ok := r.topicView.Get(topic); !ok {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	r.popStage().Send(&pop.Ack{Group: group, Topic: topic, QueueID: queueID, ExtraInfo: extra, Offset: offset,
		FailFunc: r.failWith(c, cmd),
		Reply:    func(code int32, remark string) { r.reply(c, cmd, code, remark) }})
	return nil
}

func (r *Router) handleChangeInvisible(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	hd, ref := parseAckHeader(cmd, true)
	if ref != nil {
		return ref
	}
	group, topic, extra, queueID, offset, invisible := hd.Group, hd.Topic, hd.ExtraInfo, hd.QueueID, hd.Offset, hd.InvisibleMs
	if ref := checkInvisible(invisible); ref != nil {
		return ref
	}
	if _, ok := r.topicView.Get(topic); !ok {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	r.popStage().Send(&pop.Change{Group: group, Topic: topic, QueueID: queueID, ExtraInfo: extra, Offset: offset,
		InvisibleMs: invisible, FailFunc: r.failWith(c, cmd),
		Reply: func(code int32, remark string, h pop.Handle) {
			resp := remoting.NewResponse(cmd, code, remark)
			if code == remoting.Success {
				resp.SetField("reviveQid", "0")
				resp.SetField("invisibleTime", strconv.FormatInt(h.InvisibleTime, 10))
				resp.SetField("popTime", strconv.FormatInt(h.PopTime, 10))
			}
			r.send(c, cmd, resp)
		}})
	return nil
}

func (r *Router) handleBatchAck(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	_, items, ref := parseBatchAck(cmd.Body)
	if ref != nil {
		return ref
	}
	for _, it := range items {
		if ref := r.consumeAllowed(it.Group); ref != nil {
			return ref
		}
		if ref := r.deferredCheck(c, cmd, it.Topic); ref != nil {
			return ref
		}
	}
	r.popStage().Send(&pop.BatchAck{Items: items, FailFunc: r.failWith(c, cmd),
		Reply: func(code int32, remark string, _ int) { r.reply(c, cmd, code, remark) }})
	return nil
}
