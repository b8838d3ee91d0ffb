package clients

import "github.com/wheelmq/wheelmq/actors/wirecode"

// The broker's requests to its clients, as plain data: the stage hands
// them to a client's Conn, and the front door the client came through
// writes them in its protocol (netloop/router encodes a remoting request
// of the push's Code with the fields RocketMQ's header of that code has;
// netloop/grpcgw turns a CheckTransaction into a Telemetry command and
// drops the others, which a v5 client is not sent).

// Push is one request of the broker for a client: ConsumerIDsChanged,
// CheckTransaction, ResetOffset, ReplyMessage or Relay.
type Push interface {
	// Code is the request's wire code (RocketMQ's RequestCode).
	Code() int32
}

// Request is what the stage writes to a client's Conn: a push, with the
// opaque the client's answer carries back (Response) and whether it is
// oneway (no answer expected).
type Request struct {
	Opaque int32
	Oneway bool
	Push   Push
}

// Answer is a client's answer to a request the stage sent (the remoting
// response: code, remark, header fields and body).
type Answer struct {
	Code   int32
	Remark string
	Fields map[string]string
	Body   []byte
}

// ConsumerIDsChanged tells a consumer that the members of its group
// changed, so that it rebalances at once (NOTIFY_CONSUMER_IDS_CHANGED).
type ConsumerIDsChanged struct{ Group string }

// Code implements Push.
func (ConsumerIDsChanged) Code() int32 { return wirecode.NotifyConsumerIDsChanged }

// CheckTransaction asks a producer for the state of a transaction whose
// half message waits for its end (CHECK_TRANSACTION_STATE; RocketMQ's
// CheckTransactionStateRequestHeader).
type CheckTransaction struct {
	// Topic is the half messages' topic (RMQ_SYS_TRANS_HALF_TOPIC).
	Topic string
	// TranStateTableOffset is the half message's queue offset.
	TranStateTableOffset int64
	// CommitLogOffset is the half message's CommitLog offset.
	CommitLogOffset int64
	// OffsetMsgID is the half message's offset message id.
	OffsetMsgID string
	// MsgID and TransactionID are the message's UNIQ_KEY.
	MsgID         string
	TransactionID string
	// BrokerName is the broker asking.
	BrokerName string
	// Message is the message as the producer sent it, in the stored
	// layout (storage/message), with TRANSACTION_CHECK_TIMES.
	Message []byte
}

// Code implements Push.
func (CheckTransaction) Code() int32 { return wirecode.CheckTransactionState }

// ResetOffset tells a consumer that an admin moved its group's offsets of
// a topic (RESET_CONSUMER_CLIENT_OFFSET, all queues, not forced).
type ResetOffset struct {
	Topic, Group string
	// Timestamp is the time the offsets were moved to (-1: the end).
	Timestamp int64
	// Body is the new offsets (adminbody.ResetOffsetBody, JSON).
	Body []byte
}

// Code implements Push.
func (ResetOffset) Code() int32 { return wirecode.ResetConsumerClientOffset }

// ReplyMessage pushes a request/reply reply to its requester
// (PUSH_REPLY_MESSAGE_TO_CLIENT; RocketMQ's ReplyMessageRequestHeader).
type ReplyMessage struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64
	Flag                  int32
	// Properties are the reply's properties, encoded (with
	// PUSH_REPLY_TIME).
	Properties     string
	ReconsumeTimes int32
	// BornHost is the responder's address; StoreHost the broker's.
	BornHost       string
	StoreHost      string
	StoreTimestamp int64
	Body           []byte
}

// Code implements Push.
func (ReplyMessage) Code() int32 { return wirecode.PushReplyMessageToClient }

// Relay is an admin request relayed to a client as it came, with the
// fields the broker adds (GET_CONSUMER_RUNNING_INFO,
// CONSUME_MESSAGE_DIRECTLY): its code, header fields and body.
type Relay struct {
	RequestCode int32
	Fields      map[string]string
	Body        []byte
}

// Code implements Push.
func (r Relay) Code() int32 { return r.RequestCode }
