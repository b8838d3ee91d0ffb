package router

// CONSUMER_SEND_MSG_BACK (36): decoded here, served by the broker API
// (actors/broker sendback.go, which holds the rules).

import (
	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func (r *Router) handleSendBack(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	req := broker.SendBackRequest{Group: p.str("group"), CommitLogOffset: p.int("offset", true, 0),
		DelayLevel: int(p.int("delayLevel", false, 0)), MaxReconsumeTimes: int32(p.intBits("maxReconsumeTimes", false, -1, 32)),
		OriginMsgID: cmd.Field("originMsgId"), HasMax: cmd.Field("maxReconsumeTimes") != ""}
	if ref := p.refusal(); ref != nil {
		return ref
	}
	req.Authorize = func(topic string) *broker.Error {
		if ref := r.deferredCheck(c, cmd, topic); ref != nil {
			return &broker.Error{Status: broker.Forbidden, Remark: ref.Remark}
		}
		return nil
	}
	r.core.SendBack(callerOf(c, cmd), req, func(err *broker.Error) {
		if err != nil {
			r.refuse(c, cmd, refusalOf(err))
			return
		}
		r.reply(c, cmd, remoting.Success, "")
	})
	return nil
}
