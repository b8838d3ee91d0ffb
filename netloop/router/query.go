package router

// QUERY_MESSAGE (12), VIEW_MESSAGE_BY_ID (33), CHECK_CLIENT_CONFIG (46).

import (
	"bytes"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func (r *Router) handleQueryMessage(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	q := broker.MessageQuery{Topic: p.str("topic"), Key: p.str("key"), MaxNum: int(p.intBits("maxNum", true, 0, 32)),
		Begin: p.int("beginTimestamp", true, 0), End: p.int("endTimestamp", true, 0),
		Unique: cmd.Field("_UNIQUE_KEY_QUERY") == "true"}
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.QueryMessages(callerOf(c, cmd), q, func(res *broker.QueryResult, err *broker.Error) {
		if err != nil {
			r.answer(c, cmd, err)
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.SetField("indexLastUpdateTimestamp", strconv.FormatInt(res.LastTimestamp, 10))
		resp.SetField("indexLastUpdatePhyoffset", strconv.FormatInt(res.LastOffset, 10))
		if len(res.Records) == 0 {
			resp.Code, resp.Remark = remoting.QueryNotFound, "can not find message, maybe time range not correct"
		} else {
			resp.Body = bytes.Join(res.Records, nil)
		}
		r.send(c, cmd, resp)
	})
	return nil
}

// handleViewMessage serves VIEW_MESSAGE_BY_ID. Its ACL rule is deferred
// (SUB on the topic of the record read), checked here against the
// request's signature once the API has read the record.
func (r *Router) handleViewMessage(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	off := p.int("offset", true, 0)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	r.core.ViewMessage(callerOf(c, cmd), off, func(m *broker.StoredMessage, err *broker.Error) {
		if err != nil {
			r.answer(c, cmd, err)
			return
		}
		if ref := r.deferredCheck(c, cmd, m.Record.Topic); ref != nil {
			r.refuse(c, cmd, ref)
			return
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.Body = m.Raw
		r.send(c, cmd, resp)
	})
	return nil
}

func (r *Router) handleCheckClientConfig(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	b, err := clients.ParseCheckClientBody(cmd.Body)
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	if s := b.Subscription; s != nil {
		if code, remark := r.filters.Check(s.ExpressionType, s.SubString, s.SubVersion); code != remoting.Success {
			return &Refusal{Code: code, Remark: remark}
		}
	}
	r.reply(c, cmd, remoting.Success, "")
	return nil
}
