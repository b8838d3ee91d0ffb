package producer

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Queue is one message queue: a topic's queue id on a broker.
type Queue = mqclient.Queue

// Selector chooses the queue of a send among the writable queues of the
// topic's route (never empty). lastFailed is the broker whose attempt just
// failed ("" on a first attempt); a selector may avoid it. For a batch, m is
// the first message. Select must be safe for concurrent use and must return
// one of queues.
type Selector interface {
	Select(m *Message, queues []Queue, lastFailed string) Queue
}

// SelectorFunc lets a function choose the queue (the caller-chosen
// selector).
type SelectorFunc func(m *Message, queues []Queue, lastFailed string) Queue

// Select calls f.
func (f SelectorFunc) Select(m *Message, queues []Queue, lastFailed string) Queue {
	return f(m, queues, lastFailed)
}

// HashByKey returns a selector that sends all messages with the same
// sharding key (WithShardingKey, else the first of WithKeys) to the same
// queue: FNV-1a of the key modulo the queue count. Messages without a key go
// to a random queue. It keeps the same queue on retries (order over
// availability).
func HashByKey() Selector { return hashByKey{} }

type hashByKey struct{}

func (hashByKey) Select(m *Message, queues []Queue, _ string) Queue {
	key := m.Property(message.PropShardingKey)
	if key == "" {
		if keys := m.Keys(); len(keys) > 0 {
			key = keys[0]
		}
	}
	if key == "" {
		return queues[rand.IntN(len(queues))]
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return queues[h.Sum32()%uint32(len(queues))]
}

// roundRobin is the default selection: a counter per topic, starting at a
// random value, skipping the broker that failed last on a retry and, with
// fault tolerance, brokers not available.
type roundRobin struct {
	counters sync.Map // topic -> *atomic.Uint32
}

// next returns the topic's next counter value.
func (r *roundRobin) next(topic string) uint32 {
	v, ok := r.counters.Load(topic)
	if !ok {
		c := new(atomic.Uint32)
		c.Store(rand.Uint32())
		v, _ = r.counters.LoadOrStore(topic, c)
	}
	return v.(*atomic.Uint32).Add(1)
}

// pick chooses a queue of topic. faults may be nil (fault tolerance off).
func (r *roundRobin) pick(topic string, queues []Queue, lastFailed string, faults *faultTable, now time.Time) Queue {
	n := uint32(len(queues))
	if faults != nil {
		for range n {
			q := queues[r.next(topic)%n]
			if q.Broker != lastFailed && faults.available(q.Broker, now) {
				return q
			}
		}
		// Every broker is isolated or failed last: take the one that is
		// available soonest, preferring not the last failed.
		if b := faults.soonest(queues, lastFailed); b != "" {
			for range n {
				if q := queues[r.next(topic)%n]; q.Broker == b {
					return q
				}
			}
		}
	}
	if lastFailed != "" {
		for range n {
			if q := queues[r.next(topic)%n]; q.Broker != lastFailed {
				return q
			}
		}
	}
	return queues[r.next(topic)%n]
}

// errBadSelection reports a selector that returned a queue not in the route.
var errBadSelection = errors.New("producer: selector returned a queue that is not in the route")

// choose picks the queue of an attempt.
func (p *Producer) choose(m *Message, queues []Queue, lastFailed string, now time.Time) (Queue, error) {
	if p.cfg.selector == nil {
		return p.rr.pick(m.Topic, queues, lastFailed, p.faults, now), nil
	}
	q := p.cfg.selector.Select(m, queues, lastFailed)
	for _, x := range queues {
		if x == q {
			return q, nil
		}
	}
	return Queue{}, fmt.Errorf("%w: %v", errBadSelection, q)
}
