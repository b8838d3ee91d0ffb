package producer

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Status is the store status of an accepted send.
type Status int

// Send statuses. Only SendOK means stored as asked; the others mean stored
// but not flushed or replicated in time (RocketMQ does not retry them).
const (
	// SendOK: stored.
	SendOK Status = iota
	// SendFlushDiskTimeout: stored, but the flush to disk timed out (code 10).
	SendFlushDiskTimeout
	// SendFlushSlaveTimeout: stored, but replication timed out (code 12).
	SendFlushSlaveTimeout
	// SendSlaveNotAvailable: stored, but no slave was there (code 11).
	SendSlaveNotAvailable
)

// String names the status as RocketMQ does.
func (s Status) String() string {
	switch s {
	case SendOK:
		return "SEND_OK"
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// SendResult is the outcome of an accepted send.
type SendResult struct {
	// Status is the store status.
	Status Status
	// MsgID is the message's client id (its UNIQ_KEY property); for a batch,
	// the ids of its messages joined by commas.
	MsgID string
	// OffsetMsgID is the broker's id of the stored record (store host and
	// commit-log offset); for a batch, one per message joined by commas.
	OffsetMsgID string
	// Queue is the queue written: the topic, the broker and the queue id the
	// broker reports.
	Queue Queue
	// QueueOffset is the consume-queue offset of the (first) message. For a
	// timer message it is the offset in the timer topic's queue.
	QueueOffset int64
	// TransactionID is what the broker returns as transactionId (the
	// UNIQ_KEY).
	TransactionID string
	// RegionID is the broker's region (MSG_REGION).
	RegionID string
	// TraceOn is the broker's trace switch (TRACE_ON).
	TraceOn bool
}

// MsgIDs returns the client ids of the messages sent.
func (r *SendResult) MsgIDs() []string { return strings.Split(r.MsgID, ",") }

// BrokerError is a send refused by the broker with a response code.
type BrokerError struct {
	// Code is the response code (remoting.SystemBusy, ...).
	Code int32
	// Remark is the broker's explanation.
	Remark string
	// Broker and Addr name the broker that answered.
	Broker, Addr string
}

// Error names the broker, the code and the remark.
func (e *BrokerError) Error() string {
	return fmt.Sprintf("broker %s (%s) refused the send: code %d %s: %s", e.Broker, e.Addr, e.Code, codeName(e.Code), e.Remark)
}

// Retryable reports whether another attempt may succeed (RocketMQ's retry
// codes: 1, 2, 14, 16, 17, 204, 205, 1500).
func (e *BrokerError) Retryable() bool { return slices.Contains(retryCodes, e.Code) }

// retryCodes are the response codes a send is retried on.
var retryCodes = []int32{remoting.SystemError, remoting.SystemBusy, remoting.ServiceNotAvailable,
	remoting.NoPermission, remoting.TopicNotExist, 204, 205, 1500}

// ErrBadResponse reports a success answer that lacks the fields of a send
// response.
var ErrBadResponse = errors.New("producer: malformed send response")

// codeName names the response codes a send can get.
func codeName(code int32) string {
	switch code {
	case remoting.SystemError:
		return "SYSTEM_ERROR"
	case remoting.SystemBusy:
		return "SYSTEM_BUSY"
	case remoting.RequestCodeNotSupported:
		return "REQUEST_CODE_NOT_SUPPORTED"
	case remoting.MessageIllegal:
		return "MESSAGE_ILLEGAL"
	case remoting.ServiceNotAvailable:
		return "SERVICE_NOT_AVAILABLE"
	case remoting.NoPermission:
		return "NO_PERMISSION"
	case remoting.TopicNotExist:
		return "TOPIC_NOT_EXIST"
	case remoting.InvalidParameter:
		return "INVALID_PARAMETER"
	case 204:
		return "NO_BUYER_ID"
	case 205:
		return "NOT_IN_CURRENT_UNIT"
	case 1500:
		return "GO_AWAY"
	}
	return "UNKNOWN"
}

// parseSendResponse turns a send response into a result or a *BrokerError.
func parseSendResponse(resp *remoting.Command, q Queue, addr string, uniq []string) (*SendResult, error) {
	var st Status
	switch resp.Code {
	case remoting.Success:
		st = SendOK
	case remoting.FlushDiskTimeout:
		st = SendFlushDiskTimeout
	case 12:
		st = SendFlushSlaveTimeout
	case 11:
		st = SendSlaveNotAvailable
	default:
		return nil, &BrokerError{Code: resp.Code, Remark: resp.Remark, Broker: q.Broker, Addr: addr}
	}
	qid, err1 := strconv.ParseInt(resp.Field("queueId"), 10, 32)
	off, err2 := strconv.ParseInt(resp.Field("queueOffset"), 10, 64)
	if err := errors.Join(err1, err2); err != nil || resp.Field("msgId") == "" {
		return nil, fmt.Errorf("broker %s (%s) answered code %d with queueId %q queueOffset %q msgId %q: %w",
			q.Broker, addr, resp.Code, resp.Field("queueId"), resp.Field("queueOffset"), resp.Field("msgId"), ErrBadResponse)
	}
	res := &SendResult{
		Status:        st,
		MsgID:         strings.Join(uniq, ","),
		OffsetMsgID:   resp.Field("msgId"),
		Queue:         Queue{Topic: q.Topic, Broker: q.Broker, ID: int32(qid)},
		QueueOffset:   off,
		TransactionID: resp.Field("transactionId"),
		RegionID:      resp.Field(message.PropMsgRegion),
	}
	if res.RegionID == "" {
		res.RegionID = "DefaultRegion"
	}
	trace, ok := resp.ExtFields[message.PropTraceOn]
	res.TraceOn = ok && trace != "false"
	return res, nil
}
