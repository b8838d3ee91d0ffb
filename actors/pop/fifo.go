package pop

// FIFO per message group. An orderly pop (Pop.Orderly: the group's
// consumeMessageOrderly, or the request's order=true) delivers, per
// (group, topic, queue), at most one message of each message group at a
// time: a message group's next message is held back while an earlier one
// is in flight or waiting for its redelivery (which goes first, in place,
// as any redelivery). Messages of other message groups sharing the queue
// go on being delivered: RocketMQ's order pop blocks the whole queue
// (ConsumerOrderInfoManager.needBlock), wheelmq blocks one message group.
//
// The message group is the property __SHARDINGKEY (RocketMQ's
// PROPERTY_SHARDING_KEY; the gRPC gateway, as the Apache proxy, stores a
// v5 message's message_group there). Messages without one form the
// queue's "" group: ordered among themselves, as a RocketMQ orderly queue.
//
// State (fifoState, per queue, owned by the stage): busy maps a message
// group to its one delivered and not yet acked offset (in flight or
// visible again); waiting lists, lowest first, the offsets the cursor
// (qstate.next) passed because their group was busy. Waiting offsets are
// neither acked nor in flight, so the committed offset stays below them.
// A queue passes over at most fifoMaxWaiting offsets: past that, the scan
// stops at the next offset of a busy group (the queue then waits as
// RocketMQ's does) until some are delivered.
//
// Durability: a FIFO delivery's journal entry ("P") carries its message
// group (a tenth field, "g:" + base64url). Replay (replayFIFO) gives the
// groups back to the deliveries in flight, and, for a queue with FIFO
// entries, keeps as waiting (group unknown until read again) every offset
// below the cursor the journal neither holds in flight nor saw acked:
// passed-over offsets are delivered after a restart, in order (offsets
// that were filtered out are read and skipped again).

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/wheelmq/wheelmq/storage/message"
)

// fifoMaxWaiting bounds the offsets one queue passes over for busy groups.
const fifoMaxWaiting = 1024

// fifoState is the FIFO state of one (group, topic, queue).
type fifoState struct {
	busy    map[string]int64 // message group -> its delivered, un-acked offset
	groupOf map[int64]string // that offset -> its message group
	waiting []waitEntry      // offsets passed over, lowest first
	waitN   map[string]int   // message group -> its known waiting entries
	unknown int              // waiting entries whose group is not read yet (after a restart)
	full    bool             // the scan stopped at fifoMaxWaiting (logged once)
}

// waitEntry is one offset passed over.
type waitEntry struct {
	off   int64
	group string
	known bool
}

func newFIFO() *fifoState {
	return &fifoState{busy: map[string]int64{}, groupOf: map[int64]string{}, waitN: map[string]int{}}
}

// messageGroup reads a stored record's message group ("" without one).
func messageGroup(rec []byte) string {
	props, err := message.PeekProperties(rec)
	if err != nil {
		return ""
	}
	g, _ := message.LookupProperty(props, message.PropShardingKey)
	return g
}

// fifoMode switches the queue's FIFO delivery on or off for this pop.
// Off, the offsets passed over become visible (first delivery) so that
// nothing is lost; deliveries already out keep no group.
func (e *Engine) fifoMode(k qkey, s *qstate, on bool) {
	switch {
	case on && s.fifo == nil:
		s.fifo = newFIFO()
		e.opts.Logger.Debug().Str("group", k.group).Str("topic", k.topic).Int32("queue", k.queue).
			Msg("pop: FIFO delivery per message group on")
	case !on && s.fifo != nil:
		for _, w := range s.fifo.waiting {
			if _, ok := s.visible[w.off]; !ok {
				s.visible[w.off] = 1
			}
		}
		e.opts.Logger.Info().Str("group", k.group).Str("topic", k.topic).Int32("queue", k.queue).
			Int("passed_over", len(s.fifo.waiting)).Msg("pop: FIFO delivery off (the group is no longer orderly)")
		s.fifo = nil
	}
}

// admit decides, in FIFO mode, whether the record rec at off may be
// delivered now (ok, and off then holds its group); otherwise it is (or
// stays) passed over, or, with stop, the queue's scan stops at it (too
// many passed over). Outside FIFO mode everything is admitted.
func (f *fifoState) admit(off int64, rec []byte) (ok, stop bool) {
	if f == nil {
		return true, false
	}
	if _, out := f.groupOf[off]; out {
		return true, false // the redelivery of its group's head
	}
	g := messageGroup(rec)
	if i := f.find(off); i >= 0 {
		w := &f.waiting[i]
		if !w.known {
			w.group, w.known = g, true
			f.unknown--
			f.waitN[g]++
		}
		if _, busy := f.busy[g]; busy || f.earlierWaiting(i, g) {
			return false, false
		}
		f.removeAt(i)
		f.hold(off, g)
		return true, false
	}
	if _, busy := f.busy[g]; busy || f.unknown > 0 || f.waitN[g] > 0 {
		if len(f.waiting) >= fifoMaxWaiting {
			return false, true
		}
		f.waiting = append(f.waiting, waitEntry{off: off, group: g, known: true})
		f.waitN[g]++
		return false, false
	}
	f.hold(off, g)
	return true, false
}

// hold makes off its group's delivered offset.
func (f *fifoState) hold(off int64, g string) {
	f.busy[g] = off
	f.groupOf[off] = g
}

// done releases off (acked, skipped or trimmed): its group, or its place
// among the offsets passed over.
func (f *fifoState) done(off int64) {
	if f == nil {
		return
	}
	if g, ok := f.groupOf[off]; ok {
		delete(f.groupOf, off)
		if f.busy[g] == off {
			delete(f.busy, g)
		}
		return
	}
	if i := f.find(off); i >= 0 {
		f.removeAt(i)
	}
}

// find returns off's index among the waiting entries, or -1.
func (f *fifoState) find(off int64) int {
	lo, hi := 0, len(f.waiting)
	for lo < hi {
		m := (lo + hi) / 2
		if f.waiting[m].off < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(f.waiting) && f.waiting[lo].off == off {
		return lo
	}
	return -1
}

func (f *fifoState) removeAt(i int) {
	w := f.waiting[i]
	if w.known {
		if f.waitN[w.group]--; f.waitN[w.group] <= 0 {
			delete(f.waitN, w.group)
		}
	} else {
		f.unknown--
	}
	f.waiting = append(f.waiting[:i], f.waiting[i+1:]...)
	if len(f.waiting) < fifoMaxWaiting {
		f.full = false
	}
}

// earlierWaiting reports whether an entry before i is of group g, or of a
// group not read yet.
func (f *fifoState) earlierWaiting(i int, g string) bool {
	for _, w := range f.waiting[:i] {
		if !w.known || w.group == g {
			return true
		}
	}
	return false
}

// eachWaiting offers deliver the waiting offsets that may be deliverable
// (group not busy, or not read yet), lowest first, until it returns false.
func (f *fifoState) eachWaiting(deliver func(off int64) bool) {
	if f == nil || len(f.waiting) == 0 {
		return
	}
	seen := map[string]bool{}
	var offs []int64
	for _, w := range f.waiting {
		if w.known {
			if _, busy := f.busy[w.group]; busy || seen[w.group] {
				continue
			}
			seen[w.group] = true
		}
		offs = append(offs, w.off)
	}
	for _, off := range offs {
		if f.find(off) < 0 {
			continue
		}
		if !deliver(off) {
			return
		}
	}
}

// waitingLen is the number of offsets passed over.
func (f *fifoState) waitingLen() int {
	if f == nil {
		return 0
	}
	return len(f.waiting)
}

// fifoNotes tags the pop's journal entries of FIFO deliveries with their
// message group, and logs a queue whose scan stopped at fifoMaxWaiting.
func (e *Engine) fifoNotes(ens []entry) {
	for i := range ens {
		en := &ens[i]
		s := e.queues[en.key]
		if en.kind != 'P' || s == nil || s.fifo == nil {
			continue
		}
		if g, ok := s.fifo.groupOf[en.off]; ok {
			en.fifo, en.group = true, g
		}
	}
}

// fifoStopped logs, once per episode, a queue whose scan stopped because
// fifoMaxWaiting offsets are passed over.
func (e *Engine) fifoStopped(k qkey, s *qstate) {
	if s.fifo == nil || s.fifo.full || len(s.fifo.waiting) < fifoMaxWaiting {
		return
	}
	s.fifo.full = true
	e.opts.Logger.Warn().Str("group", k.group).Str("topic", k.topic).Int32("queue", k.queue).
		Int("passed_over", len(s.fifo.waiting)).Int("busy_groups", len(s.fifo.busy)).
		Msg("pop: FIFO queue passed over its limit of offsets for busy message groups; it waits for acks")
}

// fifoField is the journal field of a FIFO delivery's message group.
func fifoField(group string) string {
	return "g:" + base64.RawURLEncoding.EncodeToString([]byte(group))
}

// parseFIFOField reads fifoField's output.
func parseFIFOField(f string) (string, error) {
	b64, ok := strings.CutPrefix(f, "g:")
	if !ok {
		return "", fmt.Errorf("pop journal: field %q is not a message group", f)
	}
	g, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("pop journal: message group %q: %w", f, err)
	}
	return string(g), nil
}

// replayFIFO rebuilds a queue's FIFO state from its journal entries, if it
// has FIFO deliveries: the groups of the deliveries in flight, and, as
// waiting (group not read yet), the offsets below the cursor that the
// journal neither holds in flight nor saw acked. applyReplayed calls it
// after taking every offset below the cursor not in flight as acked, and
// before committing: those offsets are taken back.
func (e *Engine) replayFIFO(k qkey, s *qstate, ens []entry) {
	fifo := false
	groups := map[int64]string{}
	acked := map[int64]bool{}
	for _, en := range ens {
		switch en.kind {
		case 'P':
			delete(acked, en.off)
			delete(groups, en.off)
			if en.fifo {
				fifo = true
				groups[en.off] = en.group
			}
		case 'A':
			acked[en.off] = true
		}
	}
	if !fifo {
		return
	}
	f := newFIFO()
	s.fifo = f
	for off := range s.inflight {
		if g, ok := groups[off]; ok {
			f.hold(off, g)
		}
	}
	for off := s.committed; off < s.next; off++ {
		if _, in := s.inflight[off]; in || acked[off] {
			continue
		}
		delete(s.acked, off)
		f.waiting = append(f.waiting, waitEntry{off: off})
		f.unknown++
	}
	e.opts.Logger.Info().Str("group", k.group).Str("topic", k.topic).Int32("queue", k.queue).
		Int("in_flight", len(f.groupOf)).Int("passed_over", len(f.waiting)).Msg("pop: FIFO state replayed")
}
