package stats

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Kind says why a record was stored: a client's send, or one of the
// broker's own records. Only KindClient counts as a message in
// (PutMessages, putTps, the console's "Messages in",
// rocketmq_messages_in_total); the others are counted apart, by kind, in
// wheelmq_stored_records_total, so that a timer message (one client send,
// later one write-back) or a POP delivery (journal records, a revive
// timer) is one message in, not two or three.
type Kind uint8

// The kinds of stored records. The zero value is KindClient: the hot send
// paths leave it unset.
const (
	// KindClient is a client's send (SEND_MESSAGE, batches, gRPC
	// SendMessage, a delayed or transactional message as it arrives).
	KindClient Kind = iota
	// KindRetry is a consume failure sent back for redelivery
	// (CONSUMER_SEND_MSG_BACK, or a client's send to a %RETRY% topic).
	KindRetry
	// KindDLQ is a message moved to a %DLQ% topic.
	KindDLQ
	// KindTimer is a due timer message written back to its real topic.
	KindTimer
	// KindPop is the POP engine's bookkeeping: journal records and the
	// timers of invisibility deadlines.
	KindPop
	// KindTransaction is a transaction's end: the committed message in
	// its real topic and the op records.
	KindTransaction
	// KindSystem is every other internal record (metadata log, pending
	// timer messages copied forward for retention, timer cancels and
	// recalls).
	KindSystem
	numKinds
)

var kindNames = [numKinds]string{"client", "retry", "dlq", "timer", "pop", "transaction", "system"}

// String is the kind's label value.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "system"
}

// Kinds lists every kind, for pre-registered series.
func Kinds() []Kind {
	out := make([]Kind, numKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// Protocol is how a message was consumed.
type Protocol uint8

// The consume protocols.
const (
	// ViaPull is remoting PULL_MESSAGE (push and pull consumers of the
	// remoting clients).
	ViaPull Protocol = iota
	// ViaPop is POP_MESSAGE: remoting POP consumers and every gRPC
	// consumer (the gateway consumes through POP, as RocketMQ's proxy).
	ViaPop
	numProtocols
)

var protocolNames = [numProtocols]string{"pull", "pop"}

// String is the protocol's label value.
func (p Protocol) String() string {
	if p < numProtocols {
		return protocolNames[p]
	}
	return "pull"
}

// Protocols lists the protocols.
func Protocols() []Protocol { return []Protocol{ViaPull, ViaPop} }

// TopicType names a topic and a RocketMQ message type (Normal, Delay,
// Transaction): the labels of rocketmq_messages_in_total.
type TopicType struct{ Topic, Type string }

// Pair is a message count and its bytes.
type Pair struct{ Msgs, Bytes atomic.Int64 }

// kindCounters are the per-kind and per-label totals.
type kindCounters struct {
	records [numKinds]Pair
	out     [numProtocols]Pair
	in      sync.Map // TopicType -> *Pair, client sends
	served  sync.Map // GroupTopic -> *Pair, messages consumed with their bytes
}

// Records is the count of records stored of kind k and their bytes.
func (c *Counters) Records(k Kind) (msgs, bytes int64) {
	if k >= numKinds {
		return 0, 0
	}
	return c.k.records[k].Msgs.Load(), c.k.records[k].Bytes.Load()
}

// Out is the count of messages consumed through p and their bytes.
func (c *Counters) Out(p Protocol) (msgs, bytes int64) {
	if p >= numProtocols {
		return 0, 0
	}
	return c.k.out[p].Msgs.Load(), c.k.out[p].Bytes.Load()
}

// EachIn calls f for every topic and message type clients sent to.
func (c *Counters) EachIn(f func(TopicType, *Pair)) {
	c.k.in.Range(func(k, v any) bool { f(k.(TopicType), v.(*Pair)); return true })
}

// EachServed calls f for every group and topic consumed.
func (c *Counters) EachServed(f func(GroupTopic, *Pair)) {
	c.k.served.Range(func(k, v any) bool { f(k.(GroupTopic), v.(*Pair)); return true })
}

// EachTopicIn calls f with every topic's client sends since the start.
func (c *Counters) EachTopicIn(f func(topic string, msgs int64)) {
	c.topics.Range(func(k, v any) bool { f(k.(string), v.(*atomic.Int64).Load()); return true })
}

func pair[K comparable](m *sync.Map, k K) *Pair {
	if v, ok := m.Load(k); ok {
		return v.(*Pair)
	}
	v, _ := m.LoadOrStore(k, new(Pair))
	return v.(*Pair)
}

// IsRetryTopic reports whether topic is a %RETRY% topic.
func IsRetryTopic(topic string) bool { return strings.HasPrefix(topic, "%RETRY%") }

// IsDLQTopic reports whether topic is a %DLQ% topic.
func IsDLQTopic(topic string) bool { return strings.HasPrefix(topic, "%DLQ%") }
