package pop

import (
	"github.com/asynkron/protoactor-go/actor"
)

// Remarks of refused acks and changes.
const (
	remarkExpired = "receipt handle is expired"
	remarkBad     = "receipt handle is malformed"
)

// ack applies an ACK_MESSAGE.
func (e *Engine) ack(group, topic, extraInfo string, queueID int32, offset int64) (int32, string, entry) {
	h, err := ParseHandle(extraInfo)
	if err != nil {
		e.m.Refused.Add(1)
		return CodeInvalidParam, remarkBad + ": " + err.Error(), entry{}
	}
	if queueID >= 0 && queueID != h.QueueID {
		e.m.Refused.Add(1)
		return CodeInvalidParam, remarkBad + ": queueId differs from the handle's", entry{}
	}
	_ = offset // the handle's offset is the one acked (RocketMQ: header offset == handle offset)
	return e.ackHandle(group, topic, h)
}

// live returns the live delivery the handle names.
func (e *Engine) live(group, topic string, h Handle) (qkey, *qstate, bool) {
	k := qkey{group, topic, h.QueueID}
	s := e.queues[k]
	if s == nil {
		return k, nil, false
	}
	d, ok := s.inflight[h.Offset]
	if !ok || d.backoff || d.popTime != h.PopTime || d.invisible != h.InvisibleTime || d.deadline() <= e.opts.Now().UnixMilli() {
		return k, s, false
	}
	return k, s, true
}

// ackHandle acks the delivery h names, if it is live.
func (e *Engine) ackHandle(group, topic string, h Handle) (int32, string, entry) {
	k, s, ok := e.live(group, topic, h)
	if !ok {
		e.m.Refused.Add(1)
		return CodeNoMessage, remarkExpired, entry{}
	}
	e.inflight.Add(-1)
	e.modes.Done(group, topic)
	if s.fifo != nil {
		s.ackedJOff[h.Offset] = s.inflight[h.Offset].jOff
	}
	if s.ack(h.Offset) {
		e.commit(k, s)
	}
	e.m.Acks.Add(1)
	return CodeSuccess, "", entry{kind: 'A', key: k, off: h.Offset, popTime: h.PopTime, invisible: h.InvisibleTime}
}

// change serves a CHANGE_MESSAGE_INVISIBLETIME.
func (e *Engine) change(m *Change) {
	var h Handle
	if m.Handle != nil {
		h = *m.Handle
	} else {
		var err error
		if h, err = ParseHandle(m.ExtraInfo); err != nil {
			e.m.Refused.Add(1)
			m.Reply(CodeInvalidParam, remarkBad+": "+err.Error(), Handle{})
			return
		}
	}
	k, s, ok := e.live(m.Group, m.Topic, h)
	if !ok {
		e.m.Refused.Add(1)
		m.Reply(CodeNoMessage, remarkExpired, Handle{})
		return
	}
	d := s.inflight[h.Offset]
	now := e.opts.Now().UnixMilli()
	d.popTime = max(now, d.popTime+1)
	d.invisible = max(m.InvisibleMs, 0)
	d.changed = true
	s.inflight[h.Offset] = d
	e.modes.Moved(k.group, k.topic, d.deadline())
	h.PopTime, h.InvisibleTime = d.popTime, d.invisible
	e.m.Changes.Add(1)
	e.record([]entry{{kind: 'C', key: k, off: h.Offset, popTime: d.popTime, invisible: d.invisible, attempt: d.attempt}}, func(err error) {
		if err != nil {
			m.Reply(failCode(err), err.Error(), Handle{})
			return
		}
		m.Reply(CodeSuccess, "", h)
	})
}

// expireOne makes the delivery of off popped at popTime visible again
// (attempt+1) if it is still in flight and past its deadline (or force);
// a live one not yet due goes to the heap, checked again by the tick; one
// past its deadline whose group's retry policy asks for a back-off stays
// in flight until its end (backoff.go). It reports whether the delivery
// became visible.
func (e *Engine) expireOne(k qkey, off, popTime, nowMs int64, force bool) bool {
	s := e.queues[k]
	if s == nil {
		return false
	}
	d, ok := s.inflight[off]
	if !ok || d.popTime != popTime {
		return false // acked, or changed (a later record stands for it)
	}
	if !force && d.deadline() > nowMs {
		e.heap.add(deadlineEntry{at: d.deadline(), key: k, off: off, popTime: popTime})
		return false
	}
	last := d.attempt >= e.maxAttempts(k.group)
	if !last && d.deadline() <= nowMs && e.backOff(k, s, off, d, nowMs) { // the group's retry policy (backoff.go)
		e.m.Expiries.Add(1)
		return false
	}
	delete(s.inflight, off)
	e.inflight.Add(-1)
	e.modes.Done(k.group, k.topic)
	if !d.backoff { // counted when its back-off began
		e.m.Expiries.Add(1)
	}
	if last {
		e.deadLetter(k, off, d.attempt)
		return false
	}
	s.visible[off] = d.attempt + 1
	s.visibleJOff[off] = d.jOff
	return true
}

// wake runs again the pops parked on the (group, topic)s of woke.
func (e *Engine) wake(ctx actor.Context, woke map[qkey]bool) {
	if len(woke) > 0 {
		e.rerun(ctx, func(p *Pop) bool { return woke[qkey{p.Group, p.Topic, 0}] })
	}
}

// expire makes the deliveries of the heap past their deadline visible
// again, wakes the pops parked on their topics and answers long polls past
// their poll time.
func (e *Engine) expire(ctx actor.Context) {
	now := e.opts.Now()
	ms := now.UnixMilli()
	woke := map[qkey]bool{}
	e.heap.due(ms, func(de deadlineEntry) {
		if e.expireOne(de.key, de.off, de.popTime, ms, false) {
			woke[qkey{de.key.group, de.key.topic, 0}] = true
		}
	})
	kept := e.parked[:0]
	for _, p := range e.parked {
		if !now.Before(p.PollUntil) {
			e.unparked(p)
			p.Reply(&Result{Code: CodePollingTimeout, Remark: "pop long polling timed out"})
			continue
		}
		kept = append(kept, p)
	}
	clear(e.parked[len(kept):])
	e.parked = kept
	e.wake(ctx, woke)
}

func (e *Engine) unparked(p *Pop) {
	e.opts.Parked.Add(-1)
	if e.byConn[p.ConnID]--; e.byConn[p.ConnID] <= 0 {
		delete(e.byConn, p.ConnID)
	}
}

// rerun runs again the parked pops match selects.
func (e *Engine) rerun(ctx actor.Context, match func(*Pop) bool) {
	var again []*Pop
	kept := e.parked[:0]
	for _, p := range e.parked {
		if match(p) {
			e.unparked(p)
			again = append(again, p)
			continue
		}
		kept = append(kept, p)
	}
	clear(e.parked[len(kept):])
	e.parked = kept
	for _, p := range again {
		e.pop(p, ctx)
	}
}

// answerParked answers every parked or waiting pop (the stage stops or
// restarts).
func (e *Engine) answerParked() {
	for _, p := range e.parked {
		e.unparked(p)
		p.Reply(&Result{Code: CodePollingTimeout, Remark: "pop stage restarting"})
	}
	e.parked = nil
	for _, p := range e.waiting {
		p.Reply(&Result{Code: CodeSystemError, Remark: "pop stage restarting"})
	}
	e.waiting = nil
	clear(e.pending)
}
