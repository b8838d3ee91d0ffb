package router

// HEART_BEAT (34) and UNREGISTER_CLIENT (35): codecs over the broker API
// (actors/broker clients.go, which holds their rules); GET_CONSUMER_LIST_BY_GROUP (38).

import (
	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func (r *Router) handleHeartbeat(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	hb, err := clients.ParseHeartbeat(cmd.Body)
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	r.core.Heartbeat(callerOf(c, cmd), &broker.HeartbeatRequest{Conn: clientConn{c}, Data: hb, Language: cmd.Language, Version: cmd.Version},
		func(err *broker.Error) { r.answer(c, cmd, err) })
	return nil
}

func (r *Router) handleUnregister(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	r.core.Unregister(callerOf(c, cmd), &broker.UnregisterRequest{ClientID: cmd.Field("clientID"),
		ProducerGroup: cmd.Field("producerGroup"), ConsumerGroup: cmd.Field("consumerGroup")},
		func(err *broker.Error) { r.answer(c, cmd, err) })
	return nil
}

func (r *Router) handleConsumerList(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	group := cmd.Field("consumerGroup")
	if group == "" {
		return &Refusal{Code: remoting.InvalidParameter, Remark: "the custom field <consumerGroup> is null"}
	}
	r.clientsSt.Send(&clients.ListConsumers{Group: group, FailFunc: r.failWith(c, cmd), Reply: func(ids []string) {
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		if len(ids) == 0 {
			resp.Code, resp.Remark = remoting.SystemError, "no consumer for this group, "+group
		}
		resp.Body = clients.FormatConsumerList(ids)
		r.send(c, cmd, resp)
	}})
	return nil
}
