package router

// RECALL_MESSAGE (370, RocketMQ 5.3.2+): withdraw a pending timer message
// by the recall handle its send answer carried (SendMessageResponseHeader
// field recallHandle; the RocketMQ 5 SDKs' SendReceipt.RecallHandle). The
// handle is decoded here (remoting.ParseRecallHandle: a handle that does
// not decode is 604 ILLEGAL_OPERATION); the broker API's Recall
// (actors/broker recall.go) holds the rules.

import (
	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func (r *Router) handleRecall(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	topic := cmd.Field("topic")
	h, err := remoting.ParseRecallHandle(cmd.Field("recallHandle"))
	if err != nil {
		return refuse(remoting.IllegalOperation, "%v", err)
	}
	r.core.Recall(callerOf(c, cmd), &broker.RecallRequest{Topic: topic, HandleTopic: h.Topic, BrokerName: h.BrokerName,
		DueMs: h.DueMs, Uniq: h.Uniq}, func(uniq string, res writer.Result, err *broker.Error) {
		if ref := refusalOf(err); ref != nil {
			r.sendVia(outbox(res.Out), c, cmd, remoting.NewResponse(cmd, ref.Code, ref.Remark))
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("msgId", uniq)
		r.sendVia(outbox(res.Out), c, cmd, resp)
	})
	return nil
}
