package pop

import "github.com/wheelmq/wheelmq/actors/stage"

// InFlight answers a group's POP deliveries not done yet, per topic and
// queue: popped and neither acked nor expired (InFlight), and expired,
// waiting to be offered again (Retrying; those backing off under the
// group's retry policy included). Queues the group never popped
// are absent. The map is a copy.
type InFlight struct {
	Group string
	Reply func(map[QueueKey]QueueInFlight)
	stage.FailFunc
}

// QueueKey names one queue of a topic.
type QueueKey struct {
	Topic   string
	QueueID int32
}

// QueueInFlight is one queue's deliveries not done yet.
type QueueInFlight struct {
	InFlight, Retrying int
	// Committed is the queue's POP position: every offset below it is
	// acked (or filtered out).
	Committed int64
}

// inFlightOf serves InFlight.
func (e *Engine) inFlightOf(m *InFlight) map[QueueKey]QueueInFlight {
	out := map[QueueKey]QueueInFlight{}
	for k, s := range e.queues {
		if k.group != m.Group {
			continue
		}
		q := QueueInFlight{InFlight: len(s.inflight), Retrying: len(s.visible), Committed: s.committed}
		for _, d := range s.inflight {
			if d.backoff { // expired, backing off: waits to be offered again
				q.InFlight--
				q.Retrying++
			}
		}
		out[QueueKey{k.topic, k.queue}] = q
	}
	return out
}
