package console

import (
	"context"
	"time"
)

// OperatorBackend is what the dead-letter, test-send and client pages
// need of the broker (embedded in Backend).
type OperatorBackend interface {
	// DeadLetterQueues lists the %DLQ%<group> topics with their counts.
	DeadLetterQueues(ctx context.Context, c Credentials) ([]DeadLetterQueue, error)
	// DeadLetters reads up to n messages of a DLQ topic's queue 0, newest
	// first, from offset below down (below < 0: from the newest).
	DeadLetters(ctx context.Context, c Credentials, topic string, below int64, n int) ([]DeadLetter, error)
	// Resend puts a dead letter back (admin): to its group's retry topic
	// or its original topic. The dead letter stays in the DLQ.
	Resend(ctx context.Context, c Credentials, r ResendRequest) (Resent, error)
	// Resends are the resends made from a DLQ topic since the broker
	// started, newest first ("": every DLQ).
	Resends(topic string) []Resent
	// TestSend sends one message to a topic as the logged-in account
	// (admin).
	TestSend(ctx context.Context, c Credentials, m TestMessage) (Sent, error)
	// Connections lists the connected producers and consumers of every
	// protocol, and the consumer groups' lag.
	Connections(ctx context.Context, c Credentials) (Connections, error)
}

// DeadLetterQueue is one %DLQ%<group> topic.
type DeadLetterQueue struct {
	Topic, Group string
	Min, Max     int64 // queue 0's offsets
	Messages     int64 // Max - Min over its queues
}

// DeadLetter is one message of a DLQ.
type DeadLetter struct {
	Queue              int
	Offset             int64
	MsgID, OffsetMsgID string
	OriginTopic        string // the topic it was first sent to (RETRY_TOPIC)
	OriginMsgID        string // ORIGIN_MESSAGE_ID
	Keys, Tags         string
	ReconsumeTimes     int
	BornAt, StoredAt   time.Time
	Size               int64
	Preview            string // the body's first bytes, printable
	Resent             int    // how often resent from the console
}

// Resend targets.
const (
	ResendToRetry  = "retry"  // the group's %RETRY% topic: only that group sees it
	ResendToOrigin = "origin" // the original topic: every group subscribed to it
)

// ResendRequest names a dead letter and where it goes.
type ResendRequest struct {
	Topic  string
	Queue  int
	Offset int64
	To     string // ResendToRetry or ResendToOrigin
}

// Resent records one resend.
type Resent struct {
	At          time.Time
	Who         string
	From        string // the DLQ topic
	Offset      int64  // its offset there
	MsgID       string
	To          string // the topic written
	OffsetMsgID string // the new copy's
}

// TestMessage is the test-send form.
type TestMessage struct {
	Topic, Body, Tags, Keys string
	DeliverAt               time.Time // zero: now
}

// Sent is a stored test message.
type Sent struct {
	MsgID, OffsetMsgID string
	Queue              int
	QueueOffset        int64
}

// Connections are the clients and the consumer groups' progress.
type Connections struct {
	Clients []ClientConn
	Groups  []GroupLag
}

// ClientConn is one connected client.
type ClientConn struct {
	ID, Protocol, Addr, Language string
	Version                      int
	Producers                    []string // producer groups
	Consumers                    []string // consumer groups
	LastSeen                     time.Time
}

// GroupLag is one online consumer group's progress.
type GroupLag struct {
	Group       string
	ConsumeType string // PUSH, PULL or POP
	Protocols   string // "remoting", "grpc" or both
	Online      int
	Topics      []TopicLag
	Lag         int64
	InFlight    int64
	Retrying    int64
}

// TopicLag is a group's progress on one topic (its queues summed).
type TopicLag struct {
	Topic              string
	Max, Consumed, Lag int64
	InFlight, Retrying int64
}
