package router

// The POP family (actors/pop): POP_MESSAGE (200050), ACK_MESSAGE (200051),
// CHANGE_MESSAGE_INVISIBLETIME (200053) and BATCH_ACK_MESSAGE (200151), in
// RocketMQ 5.3's header layouts (PopMessageRequestHeader, ...).

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// maxPopPoll caps a pop's pollTime.
const maxPopPoll = 60 * time.Second

func (r *Router) popStage() interface{ Send(any) } { return r.p.Stage(pop.StageName) }

func (r *Router) handlePop(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic := p.str("consumerGroup"), p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	maxNums := p.int("maxMsgNums", true, 32)
	invisible := p.int("invisibleTime", true, 0)
	poll := time.Duration(p.int("pollTime", false, 0)) * time.Millisecond
	initMode := int(p.int("initMode", false, pop.InitMin))
	if ref := p.refusal(); ref != nil {
		return ref
	}
	cfg, ok := r.topicView.Get(topic)
	if !ok {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if cfg.Perm&meta.PermRead == 0 {
		return refuse(remoting.NoPermission, "the topic[%s] peeking message is forbidden", topic)
	}
	queues := max(cfg.ReadQueueNums, cfg.WriteQueueNums)
	if queueID < -1 || queueID >= queues {
		return refuse(remoting.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			queueID, topic, cfg.ReadQueueNums, c.RemoteAddr())
	}
	if maxNums <= 0 || maxNums > 32 {
		return refuse(remoting.InvalidParameter, "the broker[%s] pop message's num is greater than 32", r.cfg.BrokerName)
	}
	if invisible < 0 {
		return refuse(remoting.InvalidParameter, "invisibleTime %d is illegal", invisible)
	}
	if ref := r.consumeAllowed(group); ref != nil {
		return ref
	}
	filter, err := r.filters.Get(cmd.Field("expType"), cmd.Field("exp"), 0)
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
	p := fieldParser{cmd: cmd}
	group, topic, extra := p.str("consumerGroup"), p.str("topic"), p.str("extraInfo")
	queueID := int32(p.int("queueId", true, 0))
	offset := p.int("offset", true, 0)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	if _, ok := r.topicView.Get(topic); !ok {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	r.popStage().Send(&pop.Ack{Group: group, Topic: topic, QueueID: queueID, ExtraInfo: extra, Offset: offset,
		FailFunc: r.failWith(c, cmd),
		Reply:    func(code int32, remark string) { r.reply(c, cmd, code, remark) }})
	return nil
}

func (r *Router) handleChangeInvisible(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group, topic, extra := p.str("consumerGroup"), p.str("topic"), p.str("extraInfo")
	queueID := int32(p.int("queueId", true, 0))
	offset := p.int("offset", true, 0)
	invisible := p.int("invisibleTime", true, 0)
	if ref := p.refusal(); ref != nil {
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

// batchAckBody is RocketMQ's BatchAckMessageRequestBody.
type batchAckBody struct {
	BrokerName string     `json:"brokerName"`
	Acks       []batchAck `json:"acks"`
}

// batchAck is RocketMQ's BatchAck: bitSet is java.util.BitSet.toByteArray
// (bit i of byte i/8 set: startOffset+i acked), base64 in JSON.
type batchAck struct {
	ConsumerGroup string `json:"consumerGroup"`
	Topic         string `json:"topic"`
	Retry         string `json:"retry"`
	StartOffset   int64  `json:"startOffset"`
	QueueID       int32  `json:"queueId"`
	ReviveQueueID int32  `json:"reviveQueueId"`
	PopTime       int64  `json:"popTime"`
	InvisibleTime int64  `json:"invisibleTime"`
	BitSet        []byte `json:"bitSet"`
}

// maxBatchAckOffsets bounds the offsets one BATCH_ACK_MESSAGE may name.
const maxBatchAckOffsets = 64 * 1024

func (r *Router) handleBatchAck(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	var body batchAckBody
	if err := json.Unmarshal(cmd.Body, &body); err != nil {
		return refuse(remoting.InvalidParameter, "batch ack body is not a BatchAckMessageRequestBody: %v", err)
	}
	var items []pop.AckItem
	total := 0
	for _, a := range body.Acks {
		if ref := r.consumeAllowed(a.ConsumerGroup); ref != nil {
			return ref
		}
		if ref := r.deferredCheck(c, cmd, a.Topic); ref != nil {
			return ref
		}
		it := pop.AckItem{Group: a.ConsumerGroup, Topic: a.Topic, QueueID: a.QueueID, PopTime: a.PopTime, InvisibleTime: a.InvisibleTime}
		for i, b := range a.BitSet {
			for bit := range 8 {
				if b&(1<<bit) != 0 {
					it.Offsets = append(it.Offsets, a.StartOffset+int64(i*8+bit))
				}
			}
		}
		if total += len(it.Offsets); total > maxBatchAckOffsets {
			return refuse(remoting.InvalidParameter, "batch ack names more than %d offsets", maxBatchAckOffsets)
		}
		items = append(items, it)
	}
	r.popStage().Send(&pop.BatchAck{Items: items, FailFunc: r.failWith(c, cmd),
		Reply: func(code int32, remark string, _ int) { r.reply(c, cmd, code, remark) }})
	return nil
}
