package broker

// The lite topics' state (RocketMQ 5.5, RIP-83; docs/lite.md): each lite
// topic of a LITE parent is one ordered queue of CommitLog offsets,
// created by its first message and deleted when idle past its TTL; each
// consumer group has a position in it and at most one message in flight.
// Only lite topics that hold messages, positions or subscriptions are in
// memory, and of those only the active ones past --lite-resident-max (the
// rest are evicted to the spill store: liteevict.go); their index is one
// append-only file (storage/litelog).

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelmq/wheelmq/storage/litelog"
)

// liteKey names a lite topic: its parent topic and its name.
type liteKey struct{ parent, lite string }

// liteQueue is one lite topic: the CommitLog offsets of its messages not
// yet consumed by every group that reads it, in order.
type liteQueue struct {
	key       liteKey
	base      int64   // the sequence number of msgs[0]
	msgs      []int64 // CommitLog offsets
	lastWrite int64   // Unix ms of the newest message
	groups    []liteGroup
	// prev and next link the parent's queues by lastWrite, oldest first
	// (the TTL sweep reads from the front).
	prev, next *liteQueue
}

// liteGroup is a consumer group's position in a lite topic.
type liteGroup struct {
	name   string
	acked  int64 // the sequence number of the first message not consumed
	flight liteFlight
}

// liteFlight is the message a group has in flight (token 0: none).
type liteFlight struct {
	token    uint64
	seq      int64
	deadline int64 // Unix ms
	attempt  int32
}

// end is the sequence number after the newest message.
func (q *liteQueue) end() int64 { return q.base + int64(len(q.msgs)) }

// group is name's position, created at the oldest message held.
func (q *liteQueue) group(name string) *liteGroup {
	for i := range q.groups {
		if q.groups[i].name == name {
			return &q.groups[i]
		}
	}
	q.groups = append(q.groups, liteGroup{name: name, acked: q.base})
	return &q.groups[len(q.groups)-1]
}

// trim drops the messages every group consumed.
func (q *liteQueue) trim() {
	if len(q.groups) == 0 {
		return
	}
	low := q.end()
	for i := range q.groups {
		low = min(low, q.groups[i].acked)
	}
	if n := low - q.base; n > 0 {
		q.msgs = append(q.msgs[:0:0], q.msgs[n:]...)
		q.base = low
	}
}

// liteParent is the lite topics of one parent, by last write.
type liteParent struct {
	name       string
	head, tail *liteQueue
	count      int
}

func (p *liteParent) remove(q *liteQueue) {
	if q.prev != nil {
		q.prev.next = q.next
	} else {
		p.head = q.next
	}
	if q.next != nil {
		q.next.prev = q.prev
	} else {
		p.tail = q.prev
	}
	q.prev, q.next = nil, nil
	p.count--
}

func (p *liteParent) pushBack(q *liteQueue) { p.insertBefore(q, nil) }

// insertBefore links q (in no list) in before at, or at the back when at
// is nil.
func (p *liteParent) insertBefore(q, at *liteQueue) {
	prev := p.tail
	if at != nil {
		prev = at.prev
		at.prev = q
	} else {
		p.tail = q
	}
	q.prev, q.next = prev, at
	if prev != nil {
		prev.next = q
	} else {
		p.head = q
	}
	p.count++
}

// liteClientKey names one client of a group.
type liteClientKey struct{ group, client string }

// liteClient is one LitePushConsumer's subscription.
type liteClient struct {
	parent string
	topics map[string]struct{}
	kick   chan struct{} // capacity 1: a message may be there
}

// liteState is the broker's lite state. mu guards everything but the log,
// which only the lite writer goroutine touches; no I/O under mu.
type liteState struct {
	mu      sync.Mutex
	open    bool
	queues  map[liteKey]*liteQueue
	parents map[string]*liteParent
	clients map[liteClientKey]*liteClient
	subs    map[liteKey]map[liteClientKey]struct{}
	tokens  uint64
	pending []litelog.Record // records for the writer, in order
	// indexed is the CommitLog offset of the newest lite message indexed
	// (-1: none): the send path indexes in CommitLog order.
	indexed int64
	// scanned is where the last scan of the CommitLog for lite messages
	// ended (OpenLite, litePromotedLocked), and epoch the role's epoch it
	// was made under: a promotion (a new epoch) scans from there.
	scanned, epoch int64
	flights        int // messages in flight (statistics)
	// journaled counts the acks appended to the lite ack journal
	// (liteack.go).
	journaled atomic.Int64
	// evicted holds the hashes (litelog.Hash) of the lite topics evicted
	// to the spill store, reloads those wanted back (a send, a
	// subscription), which the writer reloads (liteevict.go).
	evicted           map[uint64]struct{}
	reloads           map[liteKey]*liteReload
	spill             *litelog.Spill // the writer's
	evictSweptAt      time.Time      // the writer's: its last TTL sweep of the evicted
	evictions, reload atomic.Int64   // counts (statistics)

	kick chan struct{} // wakes the writer
	stop chan struct{}
	wg   sync.WaitGroup // the writer
	log  *litelog.Log   // the writer's

	// notify tells a client its subscription to a lite topic was dropped
	// (set by the gRPC gateway; nil: nobody is told).
	notify func(group, client, parent, lite string)
}

// LiteUnsubscribeNotifier is called when the broker drops a client's
// subscription to a lite topic (the lite topic expired, or a quota): the
// gRPC gateway sends NotifyUnsubscribeLiteCommand.
type LiteUnsubscribeNotifier func(group, client, parent, lite string)

// SetLiteNotifier sets who is told of dropped lite subscriptions.
func (b *Broker) SetLiteNotifier(f LiteUnsubscribeNotifier) {
	b.lite.mu.Lock()
	b.lite.notify = f
	b.lite.mu.Unlock()
}

// record queues r for the writer. mu held.
func (s *liteState) recordLocked(r litelog.Record) {
	s.pending = append(s.pending, r)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// addLocked appends the message at off to (parent, lite), creating the
// lite topic; a duplicate (an offset not past the newest) is ignored. mu
// held.
func (s *liteState) addLocked(k liteKey, off, ms int64) (*liteQueue, bool) {
	q := s.queues[k]
	if q == nil {
		p := s.parents[k.parent]
		if p == nil {
			p = &liteParent{name: k.parent}
			s.parents[k.parent] = p
		}
		k.parent = p.name // one copy of the parent's name for all its lite topics
		q = &liteQueue{key: k}
		s.queues[k] = q
		p.pushBack(q)
	} else if len(q.msgs) > 0 && off <= q.msgs[len(q.msgs)-1] {
		return q, false
	}
	q.msgs = append(q.msgs, off)
	s.indexed = max(s.indexed, off)
	if ms >= q.lastWrite {
		q.lastWrite = ms
		p := s.parents[k.parent]
		p.remove(q)
		p.pushBack(q)
	}
	return q, true
}

// dropLocked deletes lite topic q and returns the clients subscribed to
// it, whose subscriptions are gone. mu held.
func (s *liteState) dropLocked(q *liteQueue) []liteClientKey {
	delete(s.queues, q.key)
	if p := s.parents[q.key.parent]; p != nil {
		p.remove(q)
		if p.count == 0 {
			delete(s.parents, q.key.parent)
		}
	}
	for i := range q.groups {
		if q.groups[i].flight.token != 0 {
			s.flights--
		}
	}
	var out []liteClientKey
	for ck := range s.subs[q.key] {
		out = append(out, ck)
		if c := s.clients[ck]; c != nil {
			delete(c.topics, q.key.lite)
		}
	}
	delete(s.subs, q.key)
	return out
}

// wakeLocked kicks the clients subscribed to k. mu held.
func (s *liteState) wakeLocked(k liteKey) {
	for ck := range s.subs[k] {
		if c := s.clients[ck]; c != nil {
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
	}
}

// nowMs is the clock of the lite state.
func nowMs() int64 { return time.Now().UnixMilli() }
