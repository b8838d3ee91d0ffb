package pop

import (
	"container/heap"
	"sort"
)

// qkey names one (group, topic, queue) of POP state.
type qkey struct {
	group, topic string
	queue        int32
}

// delivery is one in-flight pop of an offset.
type delivery struct {
	popTime   int64 // ms
	invisible int64 // ms
	attempt   int32 // 1 for the first delivery
	jOff      int64 // journal offset of its pop entry (0 or -1 while unknown)
	// changed: the consumer set the deadline (a change of invisible
	// time); backoff: the deadline is the end of the group's back-off
	// (backoff.go). Either way the message is visible at the deadline.
	changed, backoff bool
}

func (d delivery) deadline() int64 { return d.popTime + d.invisible }

// qstate is the POP state of one (group, topic, queue).
type qstate struct {
	committed int64              // every offset below is acked (or filtered out)
	next      int64              // the next offset never popped
	inflight  map[int64]delivery // popped, neither acked nor expired
	visible   map[int64]int32    // expired, waiting for redelivery: the next attempt
	acked     map[int64]struct{} // acked offsets at or above committed
	// topOff is the highest offset popped (-1 none) and topJOff the journal
	// offset of its pop entry (-1 unknown); visibleJOff that of the latest
	// pop entry of each visible offset.
	topOff      int64
	topJOff     int64
	visibleJOff map[int64]int64
	// ackedJOff: the pop entry's journal offset of each acked offset above
	// committed (a FIFO queue's replay needs their acks: fifo.go).
	ackedJOff map[int64]int64
	fifo      *fifoState // FIFO per message group (fifo.go); nil: off
}

func newQState(start int64) *qstate {
	return &qstate{committed: start, next: start, inflight: map[int64]delivery{},
		visible: map[int64]int32{}, acked: map[int64]struct{}{}, topOff: -1, topJOff: -1, visibleJOff: map[int64]int64{},
		ackedJOff: map[int64]int64{}}
}

// ack marks off done and advances committed over what is done; it reports
// whether committed moved.
func (s *qstate) ack(off int64) bool {
	s.fifo.done(off)
	delete(s.inflight, off)
	delete(s.visible, off)
	if off < s.committed {
		return false
	}
	s.acked[off] = struct{}{}
	return s.advance()
}

// advance moves committed over the acked offsets; it reports whether it
// moved.
func (s *qstate) advance() bool {
	moved := false
	for s.committed < s.next {
		if _, ok := s.acked[s.committed]; !ok {
			break
		}
		delete(s.acked, s.committed)
		delete(s.ackedJOff, s.committed)
		s.committed++
		moved = true
	}
	return moved
}

// visibleSorted lists the offsets waiting for redelivery, lowest first.
func (s *qstate) visibleSorted() []int64 {
	out := make([]int64, 0, len(s.visible))
	for off := range s.visible {
		out = append(out, off)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// deadlineEntry is one delivery's deadline in the stage's heap; stale
// entries (acked or changed deliveries) are skipped when they come up.
type deadlineEntry struct {
	at      int64
	key     qkey
	off     int64
	popTime int64
}

type deadlineHeap []deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineEntry)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (h *deadlineHeap) add(e deadlineEntry) { heap.Push(h, e) }

// due pops the entries due at now.
func (h *deadlineHeap) due(now int64, f func(deadlineEntry)) {
	for h.Len() > 0 && (*h)[0].at <= now {
		f(heap.Pop(h).(deadlineEntry))
	}
}
