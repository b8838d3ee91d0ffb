package router

// PULL_MESSAGE (11), LITE_PULL_MESSAGE (361, served alike) and the offset
// family: QUERY_CONSUMER_OFFSET (14),
// UPDATE_CONSUMER_OFFSET (15), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31),
// SEARCH_OFFSET_BY_TIMESTAMP (29).

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/offsets"
	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// maxSuspend caps how long a pull may be parked.
const maxSuspend = 60 * time.Second

func (r *Router) handlePull(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	group := p.str("consumerGroup")
	topic := p.str("topic")
	queueID := int32(p.int("queueId", true, 0))
	offset := p.int("queueOffset", true, 0)
	maxNums := int32(p.int("maxMsgNums", true, 32))
	sysFlag := int32(p.int("sysFlag", true, 0))
	commitOffset := p.int("commitOffset", true, -1)
	suspend := time.Duration(p.int("suspendTimeoutMillis", false, 0)) * time.Millisecond
	if ref := p.refusal(); ref != nil {
		return ref
	}
	cfg, ok := r.topicView.Get(topic)
	if !ok {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if cfg.Perm&meta.PermRead == 0 {
		return refuse(remoting.NoPermission, "the topic[%s] pulling message is forbidden", topic)
	}
	if queueID < 0 || queueID >= max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
		return refuse(remoting.InvalidParameter, "queueId[%d] is illegal, topic[%s] has %d read queues", queueID, topic, cfg.ReadQueueNums)
	}
	if _, err := r.core.ConsumeAllowed(group); err != nil {
		return refusalOf(err)
	}
	suspend = min(suspend, maxSuspend)
	if ref := refusalOf(r.core.PullAllowed(group, topic, suspend)); ref != nil {
		return ref
	}
	if sysFlag&pull.FlagCommitOffset != 0 && commitOffset >= 0 {
		r.offsetsSt.Send(&offsets.Commit{Group: group, Topic: topic, QueueID: queueID, Offset: commitOffset})
	}
	var filter pull.Filter
	if sysFlag&pull.FlagSubscription != 0 {
		ver, _ := strconv.ParseInt(cmd.Field("subVersion"), 10, 64)
		f, err := r.filters.Get(cmd.Field("expressionType"), cmd.Field("subscription"), ver)
		if err != nil {
			return refuse(remoting.SubscriptionParseFailed, "parse the consumer's subscription failed")
		}
		filter = f
	} else if sub, ok := r.subView.LookupSubscription(group, topic); ok {
		f, err := r.filters.Get(sub.Type, sub.Expression, sub.Version)
		if err != nil {
			return refuse(remoting.FilterDataNotExist, "The broker's consumer filter data is not exist!Your expression may be wrong!")
		}
		filter = f
	} else {
		filter = pull.Filter{All: true} // clients filter by tag again
	}
	req := &pull.Request{
		Cmd: cmd, Group: group, Topic: topic, QueueID: queueID, Offset: offset, MaxNums: maxNums,
		SysFlag: sysFlag, Filter: filter, SuspendUntil: time.Now().Add(suspend),
		ConnID: c.ID(), Busy: connStateOf(c).busy,
		Reply: func(resp *remoting.Command) { r.send(c, cmd, resp) },
	}
	r.submitPull(req)
	return nil
}

// submitPull hands a pull to the pull stage, unless an admin reset of its
// queue (INVOKE_BROKER_TO_RESET_OFFSET) waits for it: like RocketMQ 5, such
// a pull is told OFFSET_MOVED to the new offset, once. A pull already at
// the reset offset (its consumer took RESET_CONSUMER_CLIENT_OFFSET) clears
// the mark and is served. Parked long polls of a reset queue come back
// here (see wakeReset).
func (r *Router) submitPull(req *pull.Request) {
	if !r.resets.Pending(req.Group, req.Topic, req.QueueID) {
		r.pullSt.Send(req)
		return
	}
	r.offsetsSt.Send(&offsets.TakeReset{Group: req.Group, Topic: req.Topic, QueueID: req.QueueID, FailFunc: req.Fail,
		Reply: func(off int64, ok bool) {
			if !ok || off == req.Offset {
				r.pullSt.Send(req)
				return
			}
			var minOff, maxOff int64
			if q := r.store.Queues.Lookup(req.Topic, req.QueueID); q != nil {
				minOff, maxOff = q.MinOffset(), q.MaxOffset()
			}
			resp := remoting.NewResponse(req.Cmd, remoting.PullOffsetMoved, "OFFSET_RESET")
			resp.SetField("nextBeginOffset", strconv.FormatInt(off, 10))
			resp.SetField("minOffset", strconv.FormatInt(minOff, 10))
			resp.SetField("maxOffset", strconv.FormatInt(maxOff, 10))
			resp.SetField("suggestWhichBrokerId", "0")
			req.Reply(resp)
		}})
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
