package router

// SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and
// the reply variants (324, 325; their push to the requester is reply.go).
//
// A codec over the broker API (actors/broker, send.go, which holds every
// rule of a send and its statuses): the header is decoded into a
// broker.SendRequest, the broker's answer encoded into the response
// (router/status.go maps its status to the remoting code). The plain-send
// hot path (fastsend.go) serves the commonest sends from the frame.

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// sendHeader is the decoded send request header (V1 long names or V2 short
// names).
type sendHeader struct {
	producerGroup     string
	topic             string
	defaultTopic      string
	defaultQueueNums  int32
	queueID           int32
	sysFlag           int32
	bornTimestamp     int64
	flag              int32
	properties        string
	reconsumeTimes    int32
	maxReconsumeTimes int32
	hasMaxReconsume   bool
	batch             bool
}

// v2Names maps the V2 one-letter keys to the V1 names.
var v2Names = map[string]string{
	"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
	"e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
	"j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "bname",
}

// v1ToV2 maps the V1 names to the V2 one-letter keys.
var v1ToV2 = func() map[string]string {
	m := make(map[string]string, len(v2Names))
	for short, long := range v2Names {
		m[long] = short
	}
	return m
}()

// parseSendHeader decodes the header; it reports the first problem.
func parseSendHeader(cmd *remoting.Command) (sendHeader, error) {
	get := cmd.Field
	if cmd.Code == remoting.SendMessageV2 || cmd.Code == remoting.SendBatchMessage || cmd.Code == remoting.SendReplyMessageV2 {
		if _, v1 := cmd.ExtFields["topic"]; !v1 {
			get = func(k string) string { return cmd.Field(v1ToV2[k]) }
		}
	}
	p := fieldParser{cmd: cmd, get: get}
	var h sendHeader
	h.producerGroup = p.str("producerGroup")
	h.topic = p.str("topic")
	h.defaultTopic = get("defaultTopic")
	h.defaultQueueNums = int32(p.intBits("defaultTopicQueueNums", false, 0, 32))
	h.queueID = int32(p.intBits("queueId", true, 0, 32))
	h.sysFlag = int32(p.intBits("sysFlag", true, 0, 32))
	h.bornTimestamp = p.intBits("bornTimestamp", true, 0, 64)
	h.flag = int32(p.intBits("flag", true, 0, 32))
	h.properties = get("properties")
	h.reconsumeTimes = int32(p.intBits("reconsumeTimes", false, 0, 32))
	if get("maxReconsumeTimes") != "" {
		h.maxReconsumeTimes = int32(p.intBits("maxReconsumeTimes", false, 0, 32))
		h.hasMaxReconsume = true
	}
	h.batch = get("batch") == "true" || cmd.Code == remoting.SendBatchMessage
	if len(p.errs) > 0 {
		return h, errors.New(strings.Join(p.errs, "; "))
	}
	return h, nil
}

func (r *Router) handleSend(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	h, err := parseSendHeader(cmd)
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	req := &broker.SendRequest{
		ProducerGroup: h.producerGroup, Topic: h.topic, DefaultTopic: h.defaultTopic, DefaultQueueNums: h.defaultQueueNums,
		QueueID: h.queueID, SysFlag: h.sysFlag, BornTimestamp: h.bornTimestamp, Flag: h.flag,
		ReconsumeTimes: h.reconsumeTimes, MaxReconsumeTimes: h.maxReconsumeTimes, HasMaxReconsume: h.hasMaxReconsume,
		Properties: []byte(h.properties), Batch: h.batch, Body: cmd.Body,
	}
	reply := isReply(cmd.Code) && !h.batch
	if !h.batch && !reply {
		if to, ok := message.LookupPropertyBytes(req.Properties, message.PropReplyToClient); ok && len(to) > 0 {
			r.noteRequester(c, string(to))
		}
	}
	if !reply {
		r.core.Send(callerOf(c, cmd), req, func(res *broker.SendResult, err *broker.Error) { r.answerSend(c, cmd, &h, res, err) })
		return nil
	}
	stored, push := r.startReply(c, cmd, &h)
	var taken, refused atomic.Bool // Send returned / refused the reply before it returned
	r.core.Send(callerOf(c, cmd), req, func(res *broker.SendResult, err *broker.Error) {
		if !taken.Load() && res == nil && err != nil {
			refused.Store(true)
			r.answerSend(c, cmd, &h, nil, err) // refused at once: not pushed
			return
		}
		stored(res, err)
	})
	taken.Store(true)
	if !refused.Load() {
		push()
	}
	return nil
}

// answerSend writes the send response (or the refusal).
func (r *Router) answerSend(c *netloop.Conn, cmd *remoting.Command, h *sendHeader, res *broker.SendResult, err *broker.Error) {
	var out *netloop.Outbox
	if res != nil {
		out = outbox(res.Stored.Out)
	}
	if err != nil {
		ref := refusalOf(err)
		if res == nil {
			r.refuse(c, cmd, ref)
			return
		}
		r.sendVia(out, c, cmd, remoting.NewResponse(cmd, ref.Code, ref.Remark))
		return
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	ids := make([]string, len(res.Offsets))
	for i, off := range res.Offsets {
		ids[i] = message.OffsetMsgID(r.core.Advertise(), off)
	}
	resp.SetField("msgId", strings.Join(ids, ","))
	resp.SetField("queueId", strconv.Itoa(int(res.QueueID)))
	resp.SetField("queueOffset", strconv.FormatInt(res.QueueOffset, 10))
	resp.SetField("transactionId", strings.Join(res.UniqKeys, ","))
	if res.RecallDueMs > 0 && len(res.UniqKeys) == 1 {
		resp.SetField("recallHandle", remoting.RecallHandle(h.topic, r.cfg.BrokerName, res.RecallDueMs, res.UniqKeys[0]))
	}
	resp.SetField("MSG_REGION", "DefaultRegion")
	resp.SetField("TRACE_ON", "true")
	r.sendVia(out, c, cmd, resp)
}

// sendFailure maps a failed append to its response code and remark (the
// broker API's rule, broker.SendFailure, in remoting's codes).
func sendFailure(err error) (int32, string) {
	ref := refusalOf(broker.SendFailure(err))
	return ref.Code, ref.Remark
}
