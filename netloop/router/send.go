package router

// SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and
// the reply variants (324, 325; their push to the requester is reply.go).
//
// Checks, in RocketMQ's order, each answered with a code the client
// surfaces and nothing stored:
//   - required header fields present and numeric          -> 29 INVALID_PARAMETER
//   - topic name: non-blank, <= 127 chars, [%|a-zA-Z0-9_-] -> 29
//   - topics clients may not write (system topics)        -> 16 NO_PERMISSION
//   - unknown topic: auto-created from the default topic (TBW102) when
//     allowed, else                                        -> 17 TOPIC_NOT_EXIST
//   - topic not writable                                   -> 16
//   - queue id beyond the topic's queues                   -> 29
//   - empty body, body over the size limit, properties over 32767 bytes,
//     malformed batch                                      -> 13 MESSAGE_ILLEGAL
//   - a message type (FIFO, DELAY, TRANSACTION, NORMAL) the topic's
//     message.type does not take (msgtype.go)          -> 13
//   - too many sends waiting for the writer (all connections) -> 2 SYSTEM_BUSY
// (the per-connection bounds of every request are checked before: see
// admit in router.go)
// and, from the writer: a disk with no room left          -> 14 SERVICE_NOT_AVAILABLE
// ("[DISK_FULL] ..."), any other store failure            -> 1 SYSTEM_ERROR.
// Before all of them: disk at or above the full ratio    -> 14 SERVICE_NOT_AVAILABLE
// A %RETRY% message past its max reconsume times goes to %DLQ%<group>.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// maxPropertiesSize is RocketMQ's limit on encoded properties.
const maxPropertiesSize = 32767

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
	// recallDueMs is the due time of a timer message (not a cancel), whose
	// answer carries a recall handle; 0 otherwise.
	recallDueMs int64
	batch       bool
	// gate, when set, holds the SEND_OK until the topic's route is
	// registered: the send made the topic (routegate.go).
	gate *routeGate
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
	if ref := r.diskFull(); ref != nil {
		return ref
	}
	h, err := parseSendHeader(cmd)
	if err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	if err := meta.ValidateTopic(h.topic); err != nil {
		return &Refusal{Code: remoting.InvalidParameter, Remark: err.Error()}
	}
	if meta.IsClientWriteForbidden(h.topic) {
		return refuse(remoting.NoPermission, "sending message to topic[%s] is forbidden", h.topic)
	}
	if ref := r.checkBody(cmd, &h); ref != nil {
		return ref
	}
	if cfg, ok := r.topicView.Get(h.topic); ok {
		return r.sendToTopic(c, cmd, &h, cfg)
	}
	auto, ok := r.autoCreateConfig(&h)
	if !ok {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", h.topic)
	}
	r.topicsSt.Send(&topics.Ensure{Config: auto, Done: func(cfg meta.TopicConfig, err error) {
		if err != nil {
			r.refuse(c, cmd, refuse(remoting.SystemError, "create topic %s: %v", h.topic, err))
			return
		}
		h.gate = r.awaitRoute(h.topic)
		if ref := r.sendToTopic(c, cmd, &h, cfg); ref != nil {
			r.refuse(c, cmd, ref)
		}
	}})
	return nil
}

// checkBody enforces the body and properties limits.
func (r *Router) checkBody(cmd *remoting.Command, h *sendHeader) *Refusal {
	if len(cmd.Body) == 0 {
		return &Refusal{Code: remoting.MessageIllegal, Remark: "message body is empty"}
	}
	if limit := r.p.Settings().MaxMessageSize; !h.batch && len(cmd.Body) > limit {
		return refuse(remoting.MessageIllegal, "message body size %d exceeds the limit %d", len(cmd.Body), limit)
	}
	if len(h.properties) > maxPropertiesSize {
		return refuse(remoting.MessageIllegal, "message properties size %d exceeds the limit %d", len(h.properties), maxPropertiesSize)
	}
	return nil
}

// autoCreateConfig returns the configuration a missing topic gets, or false
// when it may not be created.
func (r *Router) autoCreateConfig(h *sendHeader) (meta.TopicConfig, bool) {
	cfg := meta.TopicConfig{TopicName: h.topic, TopicFilterType: "SINGLE_TAG", Perm: meta.PermRead | meta.PermWrite}
	if strings.HasPrefix(h.topic, meta.RetryGroupTopicPrefix) || strings.HasPrefix(h.topic, meta.DLQGroupTopicPrefix) {
		cfg.ReadQueueNums, cfg.WriteQueueNums = 1, 1
		return cfg, true
	}
	if !r.p.Settings().AutoCreateTopic || h.defaultTopic == "" {
		return cfg, false
	}
	def, ok := r.topicView.Get(h.defaultTopic)
	if !ok || def.Perm&meta.PermInherit == 0 {
		return cfg, false
	}
	n := def.WriteQueueNums
	if h.defaultQueueNums > 0 && h.defaultQueueNums < n {
		n = h.defaultQueueNums
	}
	cfg.ReadQueueNums, cfg.WriteQueueNums = n, n
	cfg.Perm = def.Perm &^ meta.PermInherit
	return cfg, true
}

// sendToTopic runs the checks that need the topic's configuration, builds
// the records and hands them to the writer.
func (r *Router) sendToTopic(c *netloop.Conn, cmd *remoting.Command, h *sendHeader, cfg meta.TopicConfig) *Refusal {
	if cfg.Perm&meta.PermWrite == 0 {
		return refuse(remoting.NoPermission, "the topic[%s] sending message is forbidden", h.topic)
	}
	queues := cfg.WriteQueueNums
	if cfg.ReadQueueNums > queues {
		queues = cfg.ReadQueueNums
	}
	if h.queueID >= queues {
		return refuse(remoting.InvalidParameter, "request queueId[%d] is illegal, topic %s has %d queues", h.queueID, h.topic, queues)
	}
	if h.queueID < 0 {
		h.queueID = rand.Int32N(max(cfg.WriteQueueNums, 1))
	}
	topic, queueID := h.topic, h.queueID
	if dlq, ok := r.deadLetter(h); ok {
		topic, queueID = dlq, 0
		r.p.EnsureGroupTopic(dlq, nil)
	}
	reqQueue := queueID
	countAs, msgType := topic, "" // the topic and message type the send counts under (stats.Kind)
	var props map[string]string
	if h.batch && message.TransactionType(h.sysFlag) == message.SysFlagTransactionPrepared {
		return &Refusal{Code: remoting.MessageIllegal, Remark: "a batch cannot carry transactional (prepared) messages"}
	}
	if !h.batch {
		props = message.DecodeProperties([]byte(h.properties))
		if ref := r.checkMessageType(cfg, props); ref != nil {
			return ref
		}
		if to := props[message.PropReplyToClient]; to != "" && !isReply(cmd.Code) {
			r.noteRequester(c, to)
		}
		var ref *Refusal
		if isHalfMessage(h, props) {
			topic, queueID, ref = r.toHalfTopic(h, props, topic, queueID, time.Now().UnixMilli())
			msgType = "Transaction"
		} else {
			topic, queueID, ref = r.applyTimer(props, topic, queueID)
			if topic != countAs {
				msgType = "Delay"
			}
			h.recallDueMs = recallDue(props, topic)
		}
		if ref != nil {
			return ref
		}
	}
	records, uniqKeys, code, remark := r.buildRecords(c, cmd, h, topic, queueID, props)
	if code != remoting.Success {
		return &Refusal{Code: code, Remark: remark}
	}
	if r.backlog.Load() >= r.cfg.MaxWriterBacklog {
		return &Refusal{Code: remoting.SystemBusy, Remark: "[REJECTREQUEST]system busy, start flow control for a while"}
	}
	answer := func(res writer.Result) { r.answerSend(c, cmd, h, reqQueue, uniqKeys, res) }
	if isReply(cmd.Code) && !h.batch {
		answer = r.startReply(c, cmd, h, reqQueue, uniqKeys)
	}
	r.backlog.Add(1)
	r.appends.Push(&writer.Append{
		Key:     writer.QueueKey{Topic: topic, QueueID: queueID},
		Records: records,
		Topic:   countAs, MsgType: msgType,
		Reply: func(res writer.Result) {
			r.backlog.Add(-1)
			if h.gate != nil && res.Err == nil {
				later := res
				later.Out = nil // the writer's batch is written out by the time the route is there
				if h.gate.hold(func() { answer(later) }) {
					return
				}
			}
			answer(res)
		},
	})
	return nil
}

// deadLetter redirects a retry message that exhausted its reconsume times:
// the request's maxReconsumeTimes, else the group's retryMaxTimes.
func (r *Router) deadLetter(h *sendHeader) (string, bool) {
	if !strings.HasPrefix(h.topic, meta.RetryGroupTopicPrefix) {
		return "", false
	}
	group := strings.TrimPrefix(h.topic, meta.RetryGroupTopicPrefix)
	limit := h.maxReconsumeTimes
	if !h.hasMaxReconsume {
		g, ok := r.groupView.Get(group)
		if !ok {
			return "", false
		}
		limit = g.RetryMaxTimes
	}
	if h.reconsumeTimes <= limit {
		return "", false
	}
	return meta.DLQTopic(group), true
}

// answerSend writes the send response.
func (r *Router) answerSend(c *netloop.Conn, cmd *remoting.Command, h *sendHeader, queueID int32, uniq []string, res writer.Result) {
	if res.Err != nil {
		code, remark := sendFailure(res.Err)
		r.sendVia(res.Out, c, cmd, remoting.NewResponse(cmd, code, remark))
		return
	}
	resp := remoting.NewResponse(cmd, remoting.Success, "")
	ids := make([]string, len(res.Offsets))
	for i, off := range res.Offsets {
		ids[i] = message.OffsetMsgID(r.core.Advertise(), off)
	}
	resp.SetField("msgId", strings.Join(ids, ","))
	resp.SetField("queueId", strconv.Itoa(int(queueID)))
	resp.SetField("queueOffset", strconv.FormatInt(res.QueueOffset, 10))
	resp.SetField("transactionId", strings.Join(uniq, ","))
	if h.recallDueMs > 0 && len(uniq) == 1 {
		resp.SetField("recallHandle", remoting.RecallHandle(h.topic, r.cfg.BrokerName, h.recallDueMs, uniq[0]))
	}
	resp.SetField("MSG_REGION", "DefaultRegion")
	resp.SetField("TRACE_ON", "true")
	r.sendVia(res.Out, c, cmd, resp)
}

// sendFailure maps a failed append to its response code and remark. A
// store out of space answers SERVICE_NOT_AVAILABLE (14) with a remark
// saying so, as RocketMQ does; the client retries it (on another broker
// when there is one), and nothing was stored. Anything else is
// SYSTEM_ERROR (1) with the error.
//
// Replication (actors/writer, confirm.go), as RocketMQ's controller mode:
//   - not master (a replica, a promotion under way) or a fenced master:
//     14 SERVICE_NOT_AVAILABLE, nothing stored (RocketMQ's slave answers
//     the same code; the clients retry it on another broker);
//   - sync-state set below --min-in-sync-replicas: 1 SYSTEM_ERROR
//     "in-sync replicas not enough", nothing stored (RocketMQ's
//     IN_SYNC_REPLICAS_NOT_ENOUGH; retried by the clients);
//   - stored but not confirmed by the replicas (in time): 12
//     FLUSH_SLAVE_TIMEOUT (stored on the master, maybe lost on failover;
//     the Go client reports it as SendFlushSlaveTimeout, not retried).
func sendFailure(err error) (int32, string) {
	switch {
	case errors.Is(err, writer.ErrNotMaster), errors.Is(err, writer.ErrFenced):
		return remoting.ServiceNotAvailable, "[NOT_MASTER] service not available now: " + err.Error() + ", the message was not stored"
	case errors.Is(err, writer.ErrInSyncReplicas):
		return remoting.SystemError, "in-sync replicas not enough"
	case errors.Is(err, writer.ErrNotConfirmed):
		return remoting.FlushSlaveTimeout, "[FLUSH_SLAVE_TIMEOUT] " + err.Error()
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return remoting.ServiceNotAvailable,
			"[DISK_FULL] service not available now: the broker's disk is full, the message was not stored (" + err.Error() + ")"
	}
	return remoting.SystemError, err.Error()
}

// buildRecords encodes the request's message(s) in the stored layout.
func (r *Router) buildRecords(c *netloop.Conn, cmd *remoting.Command, h *sendHeader, topic string, queueID int32,
	props map[string]string) (
	[][]byte, []string, int32, string) {
	born := c.RemoteAddrPort()
	now := time.Now().UnixMilli()
	mk := func(body []byte, flag int32, props map[string]string) ([]byte, string, error) {
		uniq := props[message.PropUniqKey]
		if uniq == "" {
			uniq = r.core.Uniq().Next()
			props[message.PropUniqKey] = uniq
		}
		props[message.PropCluster] = r.cfg.Cluster
		switch {
		case topic == meta.TopicTransHalf:
			props[message.PropTransactionID] = uniq
		case topic != h.topic && topic != timer.Topic:
			props[message.PropDLQOriginTopic] = h.topic
		}
		rec := &message.Record{
			QueueID: queueID, Flag: flag, SysFlag: h.sysFlag, BornTimestamp: h.bornTimestamp, BornHost: born,
			StoreTimestamp: now, StoreHost: r.core.Advertise(), ReconsumeTimes: h.reconsumeTimes,
			Body: body, Topic: topic, Properties: message.EncodeProperties(props),
		}
		out, err := rec.Encode(make([]byte, 0, rec.EncodedSize()))
		return out, uniq, err
	}
	if !h.batch {
		rec, uniq, err := mk(cmd.Body, h.flag, props)
		if err != nil {
			return nil, nil, remoting.MessageIllegal, fmt.Sprintf("message cannot be stored: %v", err)
		}
		return [][]byte{rec}, []string{uniq}, remoting.Success, ""
	}
	entries, err := message.DecodeBatch(cmd.Body)
	if err != nil {
		return nil, nil, remoting.MessageIllegal, fmt.Sprintf("malformed batch body: %v", err)
	}
	if len(entries) == 0 {
		return nil, nil, remoting.MessageIllegal, "batch body holds no message"
	}
	records := make([][]byte, 0, len(entries))
	uniqs := make([]string, 0, len(entries))
	limit := r.p.Settings().MaxMessageSize
	for i, e := range entries {
		if len(e.Body) == 0 || len(e.Body) > limit {
			return nil, nil, remoting.MessageIllegal,
				fmt.Sprintf("batch message %d: body size %d must be in 1..%d", i, len(e.Body), limit)
		}
		eprops := message.DecodeProperties(e.Properties)
		if hasTimerProps(eprops) {
			return nil, nil, remoting.MessageIllegal,
				fmt.Sprintf("batch message %d: delay and timer properties are not supported in batches", i)
		}
		rec, uniq, err := mk(e.Body, e.Flag, eprops)
		if err != nil {
			return nil, nil, remoting.MessageIllegal, fmt.Sprintf("batch message %d cannot be stored: %v", i, err)
		}
		records = append(records, rec)
		uniqs = append(uniqs, uniq)
	}
	return records, uniqs, remoting.Success, ""
}
