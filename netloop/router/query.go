package router

// QUERY_MESSAGE (12), VIEW_MESSAGE_BY_ID (33), CHECK_CLIENT_CONFIG (46).

import (
	"bytes"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/index"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// indexOff is the remark of a lookup on a broker running without its index.
const indexOff = "the message index is turned off on this broker (wheelmq --index=false)"

func (r *Router) handleQueryMessage(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic, key := p.str("topic"), p.str("key")
	maxNum := int(p.intBits("maxNum", true, 0, 32))
	begin := p.int("beginTimestamp", true, 0)
	end := p.int("endTimestamp", true, 0)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	q := &index.Query{Topic: topic, Key: key, MaxNum: maxNum, Begin: begin, End: end,
		Unique: cmd.Field("_UNIQUE_KEY_QUERY") == "true"}
	if r.indexSt == nil {
		return &Refusal{Code: remoting.SystemError, Remark: indexOff}
	}
	q.Reply = func(res index.QueryResult) {
		if res.Err != nil {
			r.refuse(c, cmd, refuse(remoting.SystemError, "query message index: %v", res.Err))
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
	}
	r.indexSt.Send(q)
	return nil
}

func (r *Router) handleViewMessage(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	off := p.int("offset", true, 0)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	if r.indexSt == nil {
		return &Refusal{Code: remoting.SystemError, Remark: indexOff}
	}
	r.indexSt.Send(&index.View{Offset: off, Reply: func(rec []byte, err error) {
		if err != nil {
			r.reply(c, cmd, remoting.SystemError, "can not find message by the offset, "+strconv.FormatInt(off, 10))
			return
		}
		if r.guard != nil {
			m, _, err := message.Decode(rec)
			if err != nil {
				r.reply(c, cmd, remoting.SystemError, "can not find message by the offset, "+strconv.FormatInt(off, 10))
				return
			}
			if ref := r.deferredCheck(c, cmd, m.Topic); ref != nil {
				r.refuse(c, cmd, ref)
				return
			}
		}
		resp := remoting.NewResponse(cmd, remoting.Success, "")
		resp.Body = rec
		r.send(c, cmd, resp)
	}})
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
