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
	topics   sync.Map     // topic -> *atomic.Int64, messages stored
	groups   sync.Map     // GroupTopic -> *atomic.Int64, messages served
}

// GroupTopic names a consumer group's reads of one topic.
type GroupTopic struct{ Group, Topic string }

// Stored counts msgs messages (bytes in all) stored in topic.
func (c *Counters) Stored(topic string, msgs, bytes int) {
	c.putMsgs.Add(int64(msgs))
	c.putBytes.Add(int64(bytes))
	counter(&c.topics, topic).Add(int64(msgs))
}

// Served counts one pull of group from topic that returned msgs messages
// (0 for a pull that found none).
func (c *Counters) Served(group, topic string, msgs int) {
	if msgs <= 0 {
		c.missed.Add(1)
		return
	}
	c.found.Add(1)
	c.getMsgs.Add(int64(msgs))
	counter(&c.groups, GroupTopic{group, topic}).Add(int64(msgs))
}

// PutMessages is the number of messages stored since the start.
func (c *Counters) PutMessages() int64 { return c.putMsgs.Load() }

// PutBytes is the number of message bytes stored since the start.
func (c *Counters) PutBytes() int64 { return c.putBytes.Load() }

// GotMessages is the number of messages served since the start.
func (c *Counters) GotMessages() int64 { return c.getMsgs.Load() }

func counter[K comparable](m *sync.Map, k K) *atomic.Int64 {
	if v, ok := m.Load(k); ok {
		return v.(*atomic.Int64)
	}
	v, _ := m.LoadOrStore(k, new(atomic.Int64))
	return v.(*atomic.Int64)
}
