package router

// The request/reply half of SEND_REPLY_MESSAGE (324) and
// SEND_REPLY_MESSAGE_V2 (325): besides being stored like any send, a reply
// is pushed at once to the client that sent the request, named by its
// REPLY_TO_CLIENT property, over that client's own connection
// (PUSH_REPLY_MESSAGE_TO_CLIENT, 326), as RocketMQ's ReplyMessageProcessor
// does. The requester is found among the clients whose heartbeat names a
// producer group (RocketMQ's ProducerManager.findChannel) and, better than
// RocketMQ, among the connections that sent a request (a message carrying
// REPLY_TO_CLIENT): the Go client sends its first request before its first
// heartbeat reaches the broker, and RocketMQ refuses that request's reply.
//
// The push and the append run side by side; the responder is answered when
// both are done:
//   - push delivered (the requester answered 0)  -> the append's answer
//     (SUCCESS with msgId and offsets; if the append failed the reply was
//     still delivered: SUCCESS with msgId "0", as RocketMQ, and a warning)
//   - no REPLY_TO_CLIENT property, requester not connected to this broker,
//     or it refused or did not answer in time     -> 1 SYSTEM_ERROR with
//     RocketMQ's remark; the reply is stored all the same.

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// replyPushTimeout bounds the wait for the requester's answer to a push.
// RocketMQ waits up to 10 s; the responders' own send timeout is 3 s by
// default (Go and Java clients), so a later answer could not reach them.
const replyPushTimeout = 3 * time.Second

// isReply reports a SEND_REPLY_MESSAGE(_V2) request.
func isReply(code int32) bool {
	return code == remoting.SendReplyMessage || code == remoting.SendReplyMessageV2
}

// replyJoin answers a reply send once both its push and its append are
// done, whichever finishes last.
type replyJoin struct {
	mu      sync.Mutex
	left    int
	pushErr string // "" when the push was delivered
	res     *broker.SendResult
	err     *broker.Error
}

// done records one half; it reports whether the other half was done too.
func (j *replyJoin) done(record func()) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	record()
	j.left--
	return j.left == 0
}

// startReply returns the callback of the broker's Send, which answers the
// responder instead of answerSend, and push, which pushes the reply to its
// requester (called once Send took the reply: a reply refused at once is
// answered as refused and not pushed, as RocketMQ checks it first).
func (r *Router) startReply(c *netloop.Conn, cmd *remoting.Command, h *sendHeader) (
	answerStored func(*broker.SendResult, *broker.Error), push func()) {
	j := &replyJoin{left: 2}
	answer := func(out *netloop.Outbox) {
		if j.pushErr != "" {
			r.sendVia(out, c, cmd, remoting.NewResponse(cmd, remoting.SystemError, j.pushErr))
			return
		}
		res, err := j.res, j.err
		if res != nil {
			cp := *res
			cp.Stored.Out = out // the writer's outbox is only its own while it calls back
			res = &cp
		}
		if err != nil && res != nil { // the writer did not store it: delivered all the same
			r.log.Warn().Str("topic", h.topic).Str("remark", err.Remark).Msg("reply delivered to its requester but not stored")
			resp := remoting.NewResponse(cmd, remoting.Success, "")
			resp.SetField("msgId", "0")
			resp.SetField("queueId", strconv.Itoa(int(res.QueueID)))
			resp.SetField("queueOffset", "0")
			r.sendVia(out, c, cmd, resp)
			return
		}
		r.answerSend(c, cmd, h, res, err)
	}
	pushed := func(remark string) {
		if j.done(func() { j.pushErr = remark }) {
			answer(nil)
		}
	}
	push = func() { r.pushReply(c, cmd, h, pushed) }
	return func(res *broker.SendResult, err *broker.Error) {
		var out *netloop.Outbox
		if res != nil {
			out = outbox(res.Stored.Out)
		}
		if j.done(func() { j.res, j.err = res, err }) {
			answer(out)
		}
	}, push
}

// pushReply pushes a reply to its requester; pushed gets "" when the
// requester took it, else the remark of the responder's answer.
func (r *Router) pushReply(c *netloop.Conn, cmd *remoting.Command, h *sendHeader, pushed func(remark string)) {
	req, to := r.replyPushRequest(c, h, h.queueID, cmd.Body)
	if to == "" {
		r.log.Warn().Str("topic", h.topic).Str("remote", c.RemoteAddr()).Msg("reply message without REPLY_TO_CLIENT: not pushed")
		pushed("reply message properties[" + message.PropReplyToClient + "] is null")
	} else {
		r.clientsSt.Send(&clients.CallProducer{ClientID: to, Request: req, Timeout: replyPushTimeout,
			Reply: func(resp clients.Answer, err error) {
				switch {
				case errors.Is(err, clients.ErrNotOnline):
					pushed("push reply message fail, channel of <" + to + "> not found.")
				case err != nil:
					r.log.Warn().Err(err).Str("client", to).Msg("push reply message failed")
					pushed("push reply message to " + to + "fail.")
				case resp.Code != remoting.Success:
					r.log.Warn().Str("client", to).Int32("code", resp.Code).Str("remark", resp.Remark).
						Msg("push reply message refused by the requester")
					pushed("push reply message to " + to + "fail.")
				default:
					pushed("")
				}
			}})
	}
}

// noteRequester tells the clients stage that client id to sent a request
// over c, so that its reply finds it before its heartbeat does.
func (r *Router) noteRequester(c *netloop.Conn, to string) {
	r.clientsSt.Send(&clients.Requester{ClientID: to, Conn: clientConn{c}})
}

// replyPushRequest builds the PUSH_REPLY_MESSAGE_TO_CLIENT push of a reply
// (RocketMQ's ReplyMessageRequestHeader) and names its requester ("" when
// the reply does not say).
func (r *Router) replyPushRequest(c *netloop.Conn, h *sendHeader, queueID int32, body []byte) (clients.ReplyMessage, string) {
	props := message.DecodeProperties([]byte(h.properties))
	to := props[message.PropReplyToClient]
	now := time.Now().UnixMilli()
	props[message.PropPushReplyTime] = strconv.FormatInt(now, 10)
	return clients.ReplyMessage{
		ProducerGroup:         h.producerGroup,
		Topic:                 h.topic,
		DefaultTopic:          h.defaultTopic,
		DefaultTopicQueueNums: h.defaultQueueNums,
		QueueID:               queueID,
		SysFlag:               h.sysFlag,
		BornTimestamp:         h.bornTimestamp,
		Flag:                  h.flag,
		Properties:            string(message.EncodeProperties(props)),
		ReconsumeTimes:        h.reconsumeTimes,
		BornHost:              c.RemoteAddr(),
		StoreHost:             r.core.Advertise().String(),
		StoreTimestamp:        now,
		Body:                  body,
	}, to
}
