package pop

// PEEK_MESSAGE and NOTIFICATION are pops that change nothing: a peek
// returns the messages a pop would take next (never popped ones, from the
// queue's next offset), without receipt handles, journal entries or
// deadlines; a notification answers whether a pop would find something
// (a redelivery waiting, or an offset never popped), long-polling like a
// pop when there is nothing. POLLING_INFO counts the pops parked.

// Modes of a Pop.
const (
	// ModePop takes messages (POP_MESSAGE).
	ModePop = iota
	// ModePeek reads them without taking them (PEEK_MESSAGE).
	ModePeek
	// ModeNotify answers CodeSuccess when a pop would find a message, or
	// CodeNoMessage / CodePollingTimeout (NOTIFICATION).
	ModeNotify
)

// PollingInfo asks how many pops of (Group, Topic) are parked, on queue
// QueueID or (-1) on any.
type PollingInfo struct {
	Group, Topic string
	QueueID      int32
	Reply        func(parked int)
}

// peek reads up to p.MaxNums messages never popped, changing nothing.
func (e *Engine) peek(p *Pop, queues []int32) *Result {
	want := min(max(p.MaxNums, 1), maxPopNums)
	res := &Result{Code: CodeNoMessage, Remark: "NO_MESSAGE_IN_QUEUE", PopTime: e.opts.Now().UnixMilli()}
	for _, q := range queues {
		s := e.queues[p.key(q)]
		cq := e.opts.Store.Queues.Lookup(p.Topic, q)
		if s == nil || cq == nil {
			continue
		}
		end := cq.MaxOffset()
		start := max(s.next, cq.MinOffset())
		res.RestNum += max(end-start, 0)
		for off := start; off < end && res.Count < want; off++ {
			rec, ok, skip := e.read(cq, off, p)
			if skip {
				continue
			}
			if !ok {
				break
			}
			res.Body = append(res.Body, rec...)
			res.Count++
		}
	}
	if res.Count > 0 {
		res.Code, res.Remark = CodeSuccess, "FOUND"
	}
	return res
}

// hasMessage reports whether a pop of p's queues would find a message.
func (e *Engine) hasMessage(p *Pop, queues []int32) bool {
	for _, q := range queues {
		s := e.queues[p.key(q)]
		cq := e.opts.Store.Queues.Lookup(p.Topic, q)
		if s == nil || cq == nil {
			continue
		}
		if len(s.visible) > 0 || s.next < cq.MaxOffset() {
			return true
		}
	}
	return false
}

// pollingInfo counts the parked pops m asks about.
func (e *Engine) pollingInfo(m *PollingInfo) int {
	n := 0
	for _, p := range e.parked {
		if p.Group == m.Group && p.Topic == m.Topic && (m.QueueID < 0 || p.QueueID < 0 || p.QueueID == m.QueueID) {
			n++
		}
	}
	return n
}
