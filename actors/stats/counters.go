// Package stats counts what the broker stores and serves and turns the
// counts into the rates RocketMQ's admin tools show (GET_BROKER_RUNTIME_INFO
// putTps/getTransferredTps over 10 s, 60 s and 600 s, the per-topic put TPS
// of GET_TOPIC_STATS_INFO, the per-group consume TPS of GET_CONSUME_STATS,
// and the day totals msgPutTotalTodayMorning etc.).
//
// Counters are bumped from any goroutine with atomics (the commitlog writer
// counts stored messages, the pull stage served ones). The stats stage, a
// supervised actor ticking every second, samples them and publishes an
// immutable Snapshot through an atomic pointer; readers never message it.
// Counts start at zero with the process, like RocketMQ's.
package stats

import (
	"sync"
	"sync/atomic"
)

// Counters are the running totals since the process started; safe from any
// goroutine.
type Counters struct {
	putMsgs  atomic.Int64
	putBytes atomic.Int64
	getMsgs  atomic.Int64 // messages handed to consumers
	found    atomic.Int64 // pulls answered with messages
	missed   atomic.Int64 // pulls answered without
	topics   sync.Map     // topic -> *atomic.Int64, client sends stored
	groups   sync.Map     // GroupTopic -> *atomic.Int64, messages consumed
	k        kindCounters
	put      putTimes
}

// GroupTopic names a consumer group's reads of one topic.
type GroupTopic struct{ Group, Topic string }

// Stored counts msgs records (bytes in all) of kind stored for topic (the
// client's topic: a delayed message counts under its real topic, not the
// timer's) with RocketMQ message type msgType ("": Normal). A client's
// send to a %RETRY% topic counts as KindRetry, every record of a %DLQ%
// topic as KindDLQ; only client sends count as messages in.
func (c *Counters) Stored(kind Kind, topic, msgType string, msgs, bytes int) {
	switch {
	case IsDLQTopic(topic):
		kind = KindDLQ
	case kind == KindClient && IsRetryTopic(topic):
		kind = KindRetry
	}
	if kind >= numKinds {
		kind = KindSystem
	}
	r := &c.k.records[kind]
	r.Msgs.Add(int64(msgs))
	r.Bytes.Add(int64(bytes))
	if kind != KindClient {
		return
	}
	c.putMsgs.Add(int64(msgs))
	c.putBytes.Add(int64(bytes))
	counter(&c.topics, topic).Add(int64(msgs))
	if msgType == "" {
		msgType = "Normal"
	}
	p := pair(&c.k.in, TopicType{topic, msgType})
	p.Msgs.Add(int64(msgs))
	p.Bytes.Add(int64(bytes))
}

// Served counts one pull of group from topic that returned msgs messages
// of bytes in all (0 for a pull that found none).
func (c *Counters) Served(group, topic string, msgs, bytes int) {
	if msgs <= 0 {
		c.missed.Add(1)
		return
	}
	c.found.Add(1)
	c.Consumed(ViaPull, group, topic, msgs, bytes)
}

// Consumed counts msgs messages (bytes in all) of topic handed to group
// through protocol p: every consumed message, by every protocol, counts
// as a message out.
func (c *Counters) Consumed(p Protocol, group, topic string, msgs, bytes int) {
	if msgs <= 0 {
		return
	}
	if p >= numProtocols {
		p = ViaPull
	}
	c.getMsgs.Add(int64(msgs))
	counter(&c.groups, GroupTopic{group, topic}).Add(int64(msgs))
	o := &c.k.out[p]
	o.Msgs.Add(int64(msgs))
	o.Bytes.Add(int64(bytes))
	s := pair(&c.k.served, GroupTopic{group, topic})
	s.Msgs.Add(int64(msgs))
	s.Bytes.Add(int64(bytes))
}

// PutMessages is the number of client sends stored since the start (the
// broker's own records are not counted: see Kind).
func (c *Counters) PutMessages() int64 { return c.putMsgs.Load() }

// PutBytes is the bytes of the client sends stored since the start.
func (c *Counters) PutBytes() int64 { return c.putBytes.Load() }

// GotMessages is the number of messages consumed since the start, by
// every protocol (pull, POP, gRPC).
func (c *Counters) GotMessages() int64 { return c.getMsgs.Load() }

func counter[K comparable](m *sync.Map, k K) *atomic.Int64 {
	if v, ok := m.Load(k); ok {
		return v.(*atomic.Int64)
	}
	v, _ := m.LoadOrStore(k, new(atomic.Int64))
	return v.(*atomic.Int64)
}
