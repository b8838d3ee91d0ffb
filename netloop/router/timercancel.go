package router

// CANCEL_TIMER_MESSAGE (3501, a wheelmq extension used by wheelctl cancel):
// cancel a pending timer message by the offset message id its send returned
// (SendResult.OffsetMsgID, the id of its copy in rmq_sys_wheel_timer). A
// codec over the broker API's CancelTimer (actors/broker timercancel.go,
// which holds the rules). Answers: 0 cancelled; 29 for an id that does
// not parse or names a cancel; 22 QUERY_NOT_FOUND when the id names no
// timer message; 13 when it is already due.

import (
	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func (r *Router) handleCancelTimer(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	id := cmd.Field("msgId")
	_, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return refuse(remoting.InvalidParameter, "msgId %q: %v", id, err)
	}
	req := &broker.CancelTimerRequest{MsgID: id, CommitLogOffset: off}
	if r.guard != nil {
		req.Authorize = func(topic string) *broker.Error {
			if ref := r.deferredCheck(c, cmd, topic); ref != nil {
				return broker.Errorf(broker.Forbidden, "%s", ref.Remark)
			}
			return nil
		}
	}
	r.core.CancelTimer(callerOf(c, cmd), req, func(res writer.Result, err *broker.Error) {
		code, remark := remoting.Success, ""
		if ref := refusalOf(err); ref != nil {
			code, remark = ref.Code, ref.Remark
		}
		r.sendVia(outbox(res.Out), c, cmd, remoting.NewResponse(cmd, code, remark))
	})
	return nil
}
