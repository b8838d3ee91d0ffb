package router

// Parsing of the POP family's headers and bodies, in RocketMQ 5.3's
// layouts (PopMessageRequestHeader, AckMessageRequestHeader,
// ChangeInvisibleTimeRequestHeader, BatchAckMessageRequestBody), apart
// from the handlers so that golden frames and the fuzz target run them.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// popHeader is a POP_MESSAGE (200050) request's PopMessageRequestHeader.
type popHeader struct {
	Group, Topic string
	QueueID      int32
	MaxNums      int64
	InvisibleMs  int64
	Poll         time.Duration
	InitMode     int
	ExpType, Exp string
}

// parsePopHeader reads a POP_MESSAGE header (order, attemptId and bornTime
// are read by no one: docs/pop.md).
func parsePopHeader(cmd *remoting.Command) (popHeader, *Refusal) {
	p := fieldParser{cmd: cmd}
	h := popHeader{Group: p.str("consumerGroup"), Topic: p.str("topic")}
	h.QueueID = int32(p.intBits("queueId", true, 0, 32))
	h.MaxNums = p.int("maxMsgNums", true, 32)
	h.InvisibleMs = p.int("invisibleTime", true, 0)
	h.Poll = time.Duration(p.int("pollTime", false, 0)) * time.Millisecond
	h.InitMode = int(p.intBits("initMode", false, pop.InitMin, 32))
	h.ExpType, h.Exp = cmd.Field("expType"), cmd.Field("exp")
	return h, p.refusal()
}

// ackHeader is an ACK_MESSAGE (200051) request's AckMessageRequestHeader,
// and with InvisibleMs a CHANGE_MESSAGE_INVISIBLETIME (200053) request's
// ChangeInvisibleTimeRequestHeader.
type ackHeader struct {
	Group, Topic, ExtraInfo string
	QueueID                 int32
	Offset                  int64
	InvisibleMs             int64
}

// parseAckHeader reads an ACK_MESSAGE header, or with change a
// CHANGE_MESSAGE_INVISIBLETIME one (invisibleTime required).
func parseAckHeader(cmd *remoting.Command, change bool) (ackHeader, *Refusal) {
	p := fieldParser{cmd: cmd}
	h := ackHeader{Group: p.str("consumerGroup"), Topic: p.str("topic"), ExtraInfo: p.str("extraInfo")}
	h.QueueID = int32(p.intBits("queueId", true, 0, 32))
	h.Offset = p.int("offset", true, 0)
	if change {
		h.InvisibleMs = p.int("invisibleTime", true, 0)
	}
	return h, p.refusal()
}

// batchAckBody is RocketMQ's BatchAckMessageRequestBody.
type batchAckBody struct {
	BrokerName string     `json:"brokerName"`
	Acks       []batchAck `json:"acks"`
}

// batchAck is RocketMQ's BatchAck: bitSet is java.util.BitSet.toByteArray
// (bit i of byte i/8 set: startOffset+8*(i/8)+i%8 acked), base64 in JSON.
type batchAck struct {
	ConsumerGroup string
	Topic         string
	Retry         string
	StartOffset   int64
	QueueID       int32
	ReviveQueueID int32
	PopTime       int64
	InvisibleTime int64
	BitSet        []byte
}

// batchAckWire is BatchAck as fastjson writes it: the short names of its
// @JSONField annotations (what a Java 5.x client sends), the long ones
// accepted too (its alternateNames).
type batchAckWire struct {
	C  *string `json:"c"`
	T  *string `json:"t"`
	R  *string `json:"r"`
	SO *int64  `json:"so"`
	Q  *int32  `json:"q"`
	RQ *int32  `json:"rq"`
	PT *int64  `json:"pt"`
	IT *int64  `json:"it"`
	B  []byte  `json:"b"`

	ConsumerGroup string `json:"consumerGroup"`
	Topic         string `json:"topic"`
	Retry         string `json:"retry"`
	StartOffset   int64  `json:"startOffset"`
	QueueID       int32  `json:"queueId"`
	ReviveQueueID int32  `json:"reviveQueueId"`
	PopTime       int64  `json:"popTime"`
	InvisibleTime int64  `json:"invisibleTime"`
	BitSet        []byte `json:"bitSet"`
}

// UnmarshalJSON reads a BatchAck by its short or long field names.
func (a *batchAck) UnmarshalJSON(b []byte) error {
	var w batchAckWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("batch ack entry: %w", err)
	}
	*a = batchAck{ConsumerGroup: w.ConsumerGroup, Topic: w.Topic, Retry: w.Retry, StartOffset: w.StartOffset,
		QueueID: w.QueueID, ReviveQueueID: w.ReviveQueueID, PopTime: w.PopTime, InvisibleTime: w.InvisibleTime, BitSet: w.BitSet}
	pick(&a.ConsumerGroup, w.C)
	pick(&a.Topic, w.T)
	pick(&a.Retry, w.R)
	pick(&a.StartOffset, w.SO)
	pick(&a.QueueID, w.Q)
	pick(&a.ReviveQueueID, w.RQ)
	pick(&a.PopTime, w.PT)
	pick(&a.InvisibleTime, w.IT)
	if w.B != nil {
		a.BitSet = w.B
	}
	return nil
}

// pick sets *dst to *v when v is present.
func pick[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// maxBatchAckOffsets bounds the offsets one BATCH_ACK_MESSAGE may name.
const maxBatchAckOffsets = 64 * 1024

// parseBatchAck reads a BATCH_ACK_MESSAGE body into the API's entries.
func parseBatchAck(body []byte) (batchAckBody, []broker.AckEntry, *Refusal) {
	var b batchAckBody
	if err := json.Unmarshal(body, &b); err != nil {
		return b, nil, refuse(remoting.InvalidParameter, "batch ack body is not a BatchAckMessageRequestBody: %v", err)
	}
	var items []broker.AckEntry
	total := 0
	for _, a := range b.Acks {
		if a.ConsumerGroup == "" || a.Topic == "" {
			return b, nil, refuse(remoting.InvalidParameter, "batch ack entry without consumerGroup or topic")
		}
		it := broker.AckEntry{Group: a.ConsumerGroup, Topic: a.Topic, Offsets: []int64{},
			Handle: pop.Handle{QueueID: a.QueueID, PopTime: a.PopTime, InvisibleTime: a.InvisibleTime}}
		for i, by := range a.BitSet {
			for bit := range 8 {
				if by&(1<<bit) != 0 {
					it.Offsets = append(it.Offsets, a.StartOffset+int64(i*8+bit))
				}
			}
		}
		if total += len(it.Offsets); total > maxBatchAckOffsets {
			return b, nil, refuse(remoting.InvalidParameter, "batch ack names more than %d offsets", maxBatchAckOffsets)
		}
		items = append(items, it)
	}
	return b, items, nil
}
