package txcheck

// The records the stage writes and reads, and the check request.
//
// Op record (RMQ_SYS_TRANS_OP_HALF_TOPIC, queue 0), RocketMQ's layout plus
// one property:
//
//	topic  RMQ_SYS_TRANS_OP_HALF_TOPIC   queueId 0   sysFlag 0
//	body   "<half queue offset>,"        e.g. "17,"
//	props  TAGS=d, TX_OUTCOME=commit|rollback|discard
//	hosts  the half message's store host
//
// Committed message: the half message for REAL_TOPIC / REAL_QID (or the
// timer topic when its timer properties ask for a delay from now), sysFlag
// transaction type COMMIT, PREPAREDTXOFFSET = the half message's CommitLog
// offset, all properties but REAL_TOPIC, REAL_QID and TRAN_MSG.
//
// Discard copy (TRANS_CHECK_MAX_TIME_TOPIC, queue 0): the half message with
// TRANSACTION_CHECK_TIMES set, PREPAREDTXOFFSET = its CommitLog offset.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/clients"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// OpTag is the TAGS of an op record (RocketMQ's "d", for delete).
const OpTag = "d"

// PropOutcome names the outcome in an op record (wheelmq's addition).
const PropOutcome = "TX_OUTCOME"

// errNotHalf means a CommitLog offset does not hold a half message.
var errNotHalf = errors.New("not a half message")

// half is a decoded half message.
type half struct {
	rec   message.Record
	props map[string]string
	size  int32
}

// readHalfAt reads and checks the half message stored at off.
func (s *Stage) readHalfAt(off int64) (half, error) {
	raw, _, err := s.opts.Store.CommitLog.Read(off)
	if err != nil {
		return half{}, fmt.Errorf("read half message at %d: %w", off, err)
	}
	return decodeHalf(raw, off)
}

// readHalfSized reads the half message of a consume-queue unit.
func (s *Stage) readHalfSized(off int64, size int32) (half, error) {
	raw, err := s.opts.Store.CommitLog.ReadAt(off, size)
	if err != nil {
		return half{}, fmt.Errorf("read half message at %d: %w", off, err)
	}
	return decodeHalf(raw, off)
}

func decodeHalf(raw []byte, off int64) (half, error) {
	r, size, err := message.Decode(raw)
	if err != nil {
		return half{}, fmt.Errorf("decode half message at %d: %w", off, err)
	}
	if r.PhysicalOffset != off || r.Topic != meta.TopicTransHalf {
		return half{}, fmt.Errorf("record at %d (topic %s, stored at %d): %w", off, r.Topic, r.PhysicalOffset, errNotHalf)
	}
	return half{rec: r, props: message.DecodeProperties(r.Properties), size: int32(size)}, nil
}

// realQueue returns the half message's REAL_TOPIC and REAL_QID.
func (h half) realQueue() (string, int32, error) {
	topic := h.props[message.PropRealTopic]
	qid, err := strconv.ParseInt(h.props[message.PropRealQueueID], 10, 32)
	if topic == "" || err != nil || qid < 0 {
		return "", 0, fmt.Errorf("half message at %d has no valid REAL_TOPIC/REAL_QID (%q/%q)",
			h.rec.PhysicalOffset, topic, h.props[message.PropRealQueueID])
	}
	return topic, int32(qid), nil
}

// commitRecord builds the committed message of h at nowMs. code is non-zero
// (with remark) when it cannot be stored.
func commitRecord(h half, nowMs int64, lim timer.Limits) (writer.QueueKey, []byte, int32, string) {
	topic, qid, err := h.realQueue()
	if err != nil {
		return writer.QueueKey{}, nil, wirecode.SystemError, err.Error()
	}
	props := make(map[string]string, len(h.props))
	for k, v := range h.props {
		props[k] = v
	}
	delete(props, message.PropRealTopic)
	delete(props, message.PropRealQueueID)
	delete(props, message.PropTranMsg)
	plan := timer.PlanSend(props, nowMs, lim)
	if plan.Code != 0 {
		return writer.QueueKey{}, nil, plan.Code, plan.Remark
	}
	if plan.Timer {
		topic, qid = timer.ToTimerTopic(props, plan.DueMs, topic, qid)
	}
	r := h.rec
	out := &message.Record{
		QueueID: qid, Flag: r.Flag, SysFlag: r.SysFlag&^message.SysFlagTransactionRollback | message.SysFlagTransactionCommit,
		BornTimestamp: r.BornTimestamp, BornHost: r.BornHost, StoreTimestamp: nowMs, StoreHost: r.StoreHost,
		ReconsumeTimes: r.ReconsumeTimes, PreparedTransactionOffset: r.PhysicalOffset,
		Body: r.Body, Topic: topic, Properties: message.EncodeProperties(props),
	}
	rec, err := out.Encode(make([]byte, 0, out.EncodedSize()))
	if err != nil {
		return writer.QueueKey{}, nil, wirecode.MessageIllegal, fmt.Sprintf("committed message cannot be stored: %v", err)
	}
	return writer.QueueKey{Topic: topic, QueueID: qid}, rec, 0, ""
}

// discardRecord builds the copy of a given-up half message.
func discardRecord(h half, checks int32, nowMs int64) ([]byte, error) {
	props := make(map[string]string, len(h.props)+1)
	for k, v := range h.props {
		props[k] = v
	}
	props[message.PropTransactionCheckTimes] = strconv.Itoa(int(checks))
	r := h.rec
	out := &message.Record{
		QueueID: 0, Flag: r.Flag, SysFlag: r.SysFlag, BornTimestamp: r.BornTimestamp, BornHost: r.BornHost,
		StoreTimestamp: nowMs, StoreHost: r.StoreHost, ReconsumeTimes: r.ReconsumeTimes,
		PreparedTransactionOffset: r.PhysicalOffset, Body: r.Body, Topic: meta.TopicTransCheckMaxTime,
		Properties: message.EncodeProperties(props),
	}
	return out.Encode(make([]byte, 0, out.EncodedSize()))
}

// opRecord builds the op record ending half offset q.
func opRecord(h half, q int64, o Outcome, nowMs int64) ([]byte, error) {
	out := &message.Record{
		BornTimestamp: nowMs, BornHost: h.rec.StoreHost, StoreTimestamp: nowMs, StoreHost: h.rec.StoreHost,
		Body: []byte(strconv.FormatInt(q, 10) + ","), Topic: meta.TopicTransOpHalf,
		Properties: message.EncodeProperties(map[string]string{message.PropTags: OpTag, PropOutcome: o.String()}),
	}
	return out.Encode(make([]byte, 0, out.EncodedSize()))
}

// ParseOpBody returns the half-queue offsets an op record body names
// ("17,18,21,"); malformed items are skipped.
func ParseOpBody(body []byte) []int64 {
	var out []int64
	for item := range strings.SplitSeq(string(body), ",") {
		if item == "" {
			continue
		}
		if q, err := strconv.ParseInt(strings.TrimSpace(item), 10, 64); err == nil && q >= 0 {
			out = append(out, q)
		}
	}
	return out
}

// checkRequest builds the CHECK_TRANSACTION_STATE (39) check about h: it
// names the half message, and carries the message as the producer sent it
// (real topic and queue) in the stored layout, with
// TRANSACTION_CHECK_TIMES.
func checkRequest(h half, q int64, checks int32, broker string) (clients.CheckTransaction, error) {
	topic, qid, err := h.realQueue()
	if err != nil {
		return clients.CheckTransaction{}, err
	}
	props := message.AppendProperty(append([]byte(nil), h.rec.Properties...), message.PropTransactionCheckTimes,
		strconv.Itoa(int(checks)))
	r := h.rec
	body := &message.Record{
		QueueID: qid, Flag: r.Flag, QueueOffset: q, PhysicalOffset: r.PhysicalOffset, SysFlag: r.SysFlag,
		BornTimestamp: r.BornTimestamp, BornHost: r.BornHost, StoreTimestamp: r.StoreTimestamp, StoreHost: r.StoreHost,
		ReconsumeTimes: r.ReconsumeTimes, Body: r.Body, Topic: topic, Properties: props,
	}
	enc, err := body.Encode(make([]byte, 0, body.EncodedSize()))
	if err != nil {
		return clients.CheckTransaction{}, fmt.Errorf("encode check body: %w", err)
	}
	uniq := h.props[message.PropUniqKey]
	return clients.CheckTransaction{
		Topic:                meta.TopicTransHalf,
		TranStateTableOffset: q,
		CommitLogOffset:      r.PhysicalOffset,
		OffsetMsgID:          message.OffsetMsgID(r.StoreHost, r.PhysicalOffset),
		MsgID:                uniq,
		TransactionID:        uniq,
		BrokerName:           broker,
		Message:              enc,
	}, nil
}
