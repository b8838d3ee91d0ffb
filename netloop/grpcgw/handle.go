package grpcgw

// Receipt handles. The broker's handle is RocketMQ's extraInfo string
// (ExtraInfoUtil, actors/pop.Handle), which a remoting client reads from
// each popped message's POP_CK property:
//
//	"startOffset popTime invisibleTime reviveQid topicType brokerName queueId offset[ commitLogOffset]"
//
// The handle handed to a gRPC client is that string, then '#' and the
// message's CommitLog offset (which ForwardMessageToDeadLetterQueue's
// the remoting CONSUMER_SEND_MSG_BACK needed, and which keeps the format
// of handles already given out); the broker API gets the handle decoded.

import (
	"errors"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/pop"
)

// handleSep separates the broker's handle from the gateway's suffix.
const handleSep = "#"

// receipt is a decoded receipt handle.
type receipt struct {
	broker      string // the broker's extraInfo string, verbatim
	startOffset int64
	popTime     int64 // ms
	invisibleMs int64
	reviveQid   int32
	topicType   string
	brokerName  string
	queueID     int32
	offset      int64
	clOffset    int64 // CommitLog offset (-1: unknown)
}

// errBadHandle is a receipt handle that does not parse.
var errBadHandle = errors.New("receipt handle is malformed")

// clientHandle is the handle given to a client for a message popped with
// the broker's handle popCK, stored at CommitLog offset clOffset.
func clientHandle(popCK string, clOffset int64) string {
	return popCK + handleSep + strconv.FormatInt(clOffset, 10)
}

// parseClientHandle decodes a client's handle (with or without the
// gateway's suffix).
func parseClientHandle(h string) (receipt, error) {
	cl := int64(-1)
	if i := strings.LastIndex(h, handleSep); i >= 0 {
		v, err := strconv.ParseInt(h[i+1:], 10, 64)
		if err != nil || v < 0 {
			return receipt{}, errBadHandle
		}
		h, cl = h[:i], v
	}
	r, err := parseHandle(h)
	if err != nil {
		return receipt{}, err
	}
	if cl >= 0 {
		r.clOffset = cl
	}
	return r, nil
}

// parseHandle decodes the broker's extraInfo string.
func parseHandle(h string) (receipt, error) {
	f := strings.Split(h, " ")
	if len(f) < 8 || len(h) > 1024 {
		return receipt{}, errBadHandle
	}
	num := func(s string) (int64, bool) {
		v, err := strconv.ParseInt(s, 10, 64)
		return v, err == nil && v >= 0
	}
	var r receipt
	var ok [7]bool
	var rq, qid int64
	r.startOffset, ok[0] = num(f[0])
	r.popTime, ok[1] = num(f[1])
	r.invisibleMs, ok[2] = num(f[2])
	rq, ok[3] = num(f[3])
	qid, ok[4] = num(f[6])
	r.offset, ok[5] = num(f[7])
	ok[6] = f[5] != "" && rq <= 1<<31-1 && qid <= 1<<31-1
	for _, b := range ok {
		if !b {
			return receipt{}, errBadHandle
		}
	}
	r.reviveQid, r.queueID = int32(rq), int32(qid)
	r.topicType, r.brokerName, r.broker, r.clOffset = f[4], f[5], h, -1
	if len(f) > 8 {
		if cl, good := num(f[8]); good {
			r.clOffset = cl
		}
	}
	return r, nil
}

// handle is the broker's decoded handle (broker API calls take it).
func (r receipt) handle() pop.Handle {
	return pop.Handle{StartOffset: r.startOffset, PopTime: r.popTime, InvisibleTime: r.invisibleMs, ReviveQid: r.reviveQid,
		TopicType: r.topicType, BrokerName: r.brokerName, QueueID: r.queueID, Offset: r.offset}
}
