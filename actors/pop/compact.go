package pop

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/offsets"
)

// The journal's replay start. Reading the whole retained journal at every
// start would take as long as the traffic of the retention window, so the
// stage keeps, in the offsets stage (group JournalGroup, topic
// JournalTopic, queue 0), the lowest journal offset a replay still needs,
// and a start reads from there. Below it every entry concerns offsets a
// replay does not need to see:
//
//   - a delivery in flight or waiting for redelivery needs its latest pop
//     entry (its popTime, invisibleTime and attempt);
//   - a queue with offsets popped above its committed offset needs the pop
//     entry of its highest popped offset (the replay finds the queue's next
//     offset there; popped offsets below it that are neither in flight nor
//     waiting count as acked; offsets above it are read again);
//   - a queue whose entries were replayed but not yet used since the start
//     needs all of them;
//   - a FIFO queue needs the pop entries of its acked offsets above its
//     committed offset too (its replay takes a popped offset whose ack it
//     does not see for one passed over, fifo.go).
//
// The committed offsets go to the same stage before the replay start that
// relies on them, so a flush of its table never holds a start newer than
// the offsets it assumes. A delivery whose pop entry is not yet stored
// (its offset unknown) or a dead-letter copy under way holds the start
// where it is.

// JournalGroup is the system consumer group under which the journal's
// replay start is kept.
const JournalGroup = "CID_RMQ_SYS_WHEELMQ_POP"

// compactEvery is how often the replay start is computed.
const compactEvery = time.Second

// maxReplayStartWait bounds the wait for the offsets stage's answer.
const maxReplayStartWait = 10 * time.Second

// journaled tells the stage where entries were stored in the journal.
type journaled struct {
	entries []entry
	first   int64 // journal queue offset of entries[0]
}

// replayFrom is the offsets stage's answer: the persisted replay start.
type replayFrom struct {
	off int64
	ok  bool
}

// noteJournaled records the journal offsets of pop entries.
func (e *Engine) noteJournaled(m *journaled) {
	for i, en := range m.entries {
		if en.kind != 'P' {
			continue
		}
		s := e.queues[en.key]
		if s == nil {
			continue
		}
		j := m.first + int64(i)
		if d, ok := s.inflight[en.off]; ok && d.popTime == en.popTime && d.jOff < 0 {
			d.jOff = j
			s.inflight[en.off] = d
		}
		if en.off >= s.topOff {
			s.topOff, s.topJOff = en.off, j
		}
	}
}

// askReplayStart asks the offsets stage for the persisted replay start;
// it reports false when there is none to ask (replay from the start).
func (e *Engine) askReplayStart() bool {
	if e.opts.Offsets == nil || e.self == nil {
		return false
	}
	st := e.opts.Offsets()
	if st == nil {
		return false
	}
	self := e.self
	st.Send(&offsets.Query{Group: JournalGroup, Topic: JournalTopic, QueueID: 0,
		Reply:    func(off int64, ok bool) { self.Send(&replayFrom{off: off, ok: ok}) },
		FailFunc: func(error) { self.Send(&replayFrom{}) }})
	return true
}

// replayStart computes the lowest journal offset a replay needs now; ok
// is false while some entry's offset is not known yet.
func (e *Engine) replayStart() (int64, bool) {
	if e.dlqPending > 0 {
		return 0, false
	}
	cq := e.opts.Store.Queues.Lookup(JournalTopic, 0)
	if cq == nil {
		return 0, false
	}
	start := cq.MaxOffset()
	for _, ens := range e.replayed { // queues not rebuilt yet: all their entries
		start = min(start, ens[0].jOff)
	}
	for _, s := range e.queues {
		if s.topOff >= s.committed {
			if s.topJOff < 0 {
				return 0, false
			}
			start = min(start, s.topJOff)
		}
		for _, d := range s.inflight {
			if d.jOff < 0 {
				return 0, false
			}
			start = min(start, d.jOff)
		}
		for off, j := range s.visibleJOff {
			if _, ok := s.visible[off]; !ok {
				delete(s.visibleJOff, off)
				continue
			}
			if j < 0 {
				return 0, false
			}
			start = min(start, j)
		}
		for off := range s.visible {
			if _, ok := s.visibleJOff[off]; !ok {
				return 0, false // made visible without a known entry
			}
		}
		if s.fifo != nil { // its replay infers passed-over offsets from the acks it sees
			for off, j := range s.ackedJOff {
				if off < s.committed {
					delete(s.ackedJOff, off)
					continue
				}
				if j < 0 {
					return 0, false
				}
				start = min(start, j)
			}
		}
	}
	return start, true
}

// ownsState reports whether the engine's state is the group's POP state:
// on a standalone broker always; in a replicated group only on the master,
// and only once its journal was replayed as master (Reload). Between a
// promotion and that replay the engine still holds what it saw as a
// replica (nothing in flight), and a start computed from that would skip
// the old master's pops and acks.
func (e *Engine) ownsState() bool {
	return e.opts.Master == nil || (e.replayedAsMaster && e.opts.Master())
}

// compact stores the replay start when it moved.
func (e *Engine) compact() {
	if e.opts.Offsets == nil || !e.replayOK || !e.ownsState() {
		return
	}
	now := e.opts.Now()
	if now.Sub(e.lastCompact) < compactEvery {
		return
	}
	e.lastCompact = now
	start, ok := e.replayStart()
	if !ok || start <= e.storedStart {
		return
	}
	if st := e.opts.Offsets(); st != nil {
		st.Send(&offsets.Commit{Group: JournalGroup, Topic: JournalTopic, QueueID: 0, Offset: start})
		e.storedStart = start
	}
}
