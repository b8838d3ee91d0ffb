package router

// The POP family (actors/pop, through the broker API actors/broker):
// POP_MESSAGE (200050), ACK_MESSAGE (200051), CHANGE_MESSAGE_INVISIBLETIME
// (200053) and BATCH_ACK_MESSAGE (200151) (PEEK, NOTIFICATION and
// POLLING_INFO: popinfo.go), in RocketMQ 5.3's header layouts
// (PopMessageRequestHeader, ...). Each handler decodes, calls the API and
// encodes its answer; the rules are the API's.

import (
	"strconv"
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func (r *Router) handlePop(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	h, ref := parsePopHeader(cmd)
	if ref != nil {
		return ref
	}
	// The header's int64, clamped into the request's int32 so that the
	// API refuses what is out of range.
	nums := int32(max(min(h.MaxNums, broker.MaxPopNums+1), 0))
	r.core.Pop(callerOf(c, cmd), &broker.PopRequest{
		Group: h.Group, Topic: h.Topic, QueueID: h.QueueID, MaxNums: nums,
		Invisible: invisibleOf(h.InvisibleMs), Poll: h.Poll, InitMode: h.InitMode,
		ExpType: h.ExpType, Exp: h.Exp, Order: cmd.Field("order") == "true", Conn: c.ID(),
	}, func(res *broker.PopResult, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		r.send(c, cmd, r.popResponse(cmd, res))
	})
	return nil
}

// popResponse encodes a pop's answer: the records with POP_CK, and the
// offsets per queue (startOffsetInfo, msgOffsetInfo).
func (r *Router) popResponse(cmd *remoting.Command, res *broker.PopResult) *remoting.Command {
	code, remark := remoting.Success, res.Remark
	switch res.Empty {
	case broker.NoMessage:
		code = pop.CodeNoMessage
	case broker.PollTimeout:
		code = pop.CodePollingTimeout
	case broker.PollingFull:
		code = pop.CodePollingFull
	}
	var body []byte
	var starts, offs []string
	for i := 0; i < len(res.Messages); {
		q := res.Messages[i].Handle.QueueID
		var taken []string
		first := res.Messages[i].Handle.Offset
		for ; i < len(res.Messages) && res.Messages[i].Handle.QueueID == q; i++ {
			d := &res.Messages[i]
			b, err := pop.AppendEncoded(body, d)
			if err != nil {
				// Stored records re-encode; one that does not is left to
				// expire and is logged.
				r.log.Error().Err(err).Str("topic", d.Record.Topic).Int32("queue", q).Int64("offset", d.Handle.Offset).
					Msg("pop: re-encode failed")
				continue
			}
			body = b
			taken = append(taken, strconv.FormatInt(d.Handle.Offset, 10))
		}
		qs := strconv.Itoa(int(q))
		starts = append(starts, "0 "+qs+" "+strconv.FormatInt(first, 10))
		offs = append(offs, "0 "+qs+" "+strings.Join(taken, ","))
	}
	resp := remoting.NewResponse(cmd, code, remark)
	resp.SetField("popTime", strconv.FormatInt(res.PopTime, 10))
	resp.SetField("invisibleTime", strconv.FormatInt(res.InvisibleMs, 10))
	resp.SetField("reviveQid", "0")
	resp.SetField("restNum", strconv.FormatInt(res.RestNum, 10))
	if len(starts) > 0 {
		resp.SetField("startOffsetInfo", strings.Join(starts, ";"))
		resp.SetField("msgOffsetInfo", strings.Join(offs, ";"))
	}
	resp.Body = body
	return resp
}

// invisibleOf is a header's invisibleTime (ms) as a duration, clamped so
// that the API refuses what is out of range.
func invisibleOf(ms int64) time.Duration {
	return time.Duration(max(min(ms, broker.MaxInvisible.Milliseconds()+1), -1)) * time.Millisecond
}

// ackHandle decodes an ACK_MESSAGE's or CHANGE_MESSAGE_INVISIBLETIME's
// receipt handle (extraInfo), which must name the header's queue.
func ackHandle(h ackHeader) (pop.Handle, *Refusal) {
	ph, err := pop.ParseHandle(h.ExtraInfo)
	if err != nil {
		return ph, refuse(remoting.InvalidParameter, "receipt handle is malformed: %v", err)
	}
	if h.QueueID >= 0 && h.QueueID != ph.QueueID {
		return ph, refuse(remoting.InvalidParameter, "receipt handle is malformed: queueId differs from the handle's")
	}
	// The handle's offset is the one acked (RocketMQ: header offset ==
	// handle offset).
	return ph, nil
}

func (r *Router) handleAck(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	h, ref := parseAckHeader(cmd, false)
	if ref != nil {
		return ref
	}
	if broker.IsLiteHandle(h.ExtraInfo) {
		return r.liteAck(c, cmd, h) // lite.go
	}
	ph, ref := ackHandle(h)
	if ref != nil {
		return ref
	}
	r.core.Ack(callerOf(c, cmd), &broker.AckRequest{Group: h.Group, Topic: h.Topic, Entries: []broker.AckEntry{{Handle: ph}}},
		func(res *broker.AckResult, err *broker.Error) {
			if err == nil {
				err = res.Refused[0]
			}
			if err != nil {
				r.refuse(c, cmd, refusalOf(err))
				return
			}
			r.reply(c, cmd, remoting.Success, "")
		})
	return nil
}

func (r *Router) handleChangeInvisible(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	h, ref := parseAckHeader(cmd, true)
	if ref != nil {
		return ref
	}
	if broker.IsLiteHandle(h.ExtraInfo) {
		return r.liteChange(c, cmd, h) // lite.go
	}
	ph, ref := ackHandle(h)
	if ref != nil {
		return ref
	}
	r.core.ChangeInvisible(callerOf(c, cmd), &broker.ChangeRequest{Group: h.Group, Topic: h.Topic, Handle: ph,
		Invisible: invisibleOf(h.InvisibleMs)}, func(nh pop.Handle, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("reviveQid", "0")
		resp.SetField("invisibleTime", strconv.FormatInt(nh.InvisibleTime, 10))
		resp.SetField("popTime", strconv.FormatInt(nh.PopTime, 10))
		r.send(c, cmd, resp)
	})
	return nil
}

func (r *Router) handleBatchAck(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	_, entries, ref := parseBatchAck(cmd.Body)
	if ref != nil {
		return ref
	}
	for _, e := range entries {
		if ref := r.deferredCheck(c, cmd, e.Topic); ref != nil {
			return ref
		}
	}
	// Entries of a batch that are no longer live are skipped: the batch is
	// answered SUCCESS (RocketMQ's AckMessageProcessor).
	r.core.Ack(callerOf(c, cmd), &broker.AckRequest{Entries: entries}, func(_ *broker.AckResult, err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		r.reply(c, cmd, remoting.Success, "")
	})
	return nil
}
