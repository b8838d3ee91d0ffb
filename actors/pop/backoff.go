package pop

import (
	"encoding/binary"
	"hash/fnv"
	"time"

	"github.com/wheelmq/wheelmq/storage/meta"
)

// Back-off of expired deliveries: the group's retry policy. A delivery
// whose deadline came from its pop (the invisible time the consumer asked
// for) and passed without an ack has failed; when the group set a retry
// policy (RetryPolicy reports one), the message is not visible again at
// once but after the policy's delay for that delivery attempt, counted from
// the deadline:
//
//	visible again at  popTime + invisibleTime + policy.AttemptDelay(attempt)
//
// (meta.AttemptDelay: the delays the v5 clients use for their own nacks).
// The broker does this as a change of invisible time of its own: the
// delivery stays in flight with popTime = its deadline, invisibleTime =
// the delay and backoff set, journaled as a "B" entry and timed by a
// revive timer on the wheel, so a restart keeps it and it is never early.
// Its receipt handle is refused from the deadline on, as any expired one.
// When the back-off ends the message is visible with attempt+1.
//
// No back-off:
//   - a group without a policy (RocketMQ's behaviour: visible at the
//     deadline);
//   - a deadline a consumer set itself (CHANGE_MESSAGE_INVISIBLETIME, a
//     v5 ChangeInvisibleDuration: a PushConsumer's nack already carries
//     the policy's delay, the gateway's auto-renew and release theirs);
//   - the group's last attempt: the message goes to the dead-letter queue
//     at the deadline.
//
// The jitter's draw is a hash of the delivery (group, topic, queue,
// offset, attempt), so a replay that finds the deadline passed and no "B"
// entry (a crash in between) computes the same back-off.

// backoffUntil is when the expired delivery d of off comes back under the
// group's policy; ok is false when it comes back at its deadline.
func (e *Engine) backoffUntil(k qkey, off int64, d delivery) (until int64, ok bool) {
	if d.changed || d.backoff || e.opts.RetryPolicy == nil {
		return 0, false
	}
	p, set := e.opts.RetryPolicy(k.group)
	if !set {
		return 0, false
	}
	delay := p.AttemptDelay(d.attempt, jitterDraw(k, off, d.attempt))
	ms := (delay + time.Millisecond - 1) / time.Millisecond // never shorter than the policy's
	return d.deadline() + int64(ms), true
}

// jitterDraw is a draw from [0, 1) fixed by the delivery.
func jitterDraw(k qkey, off int64, attempt int32) float64 {
	h := fnv.New64a()
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(k.queue))
	binary.BigEndian.PutUint64(b[4:], uint64(off))
	h.Write([]byte(k.group))
	h.Write([]byte{0})
	h.Write([]byte(k.topic))
	h.Write(b[:])
	binary.BigEndian.PutUint32(b[:4], uint32(attempt))
	h.Write(b[:4])
	return float64(h.Sum64()>>11) / (1 << 53)
}

// backOff starts the back-off of the expired delivery d of off (k's state
// s) if the group's policy asks for one that has not ended by now; it
// reports whether it did (the delivery stays in flight until then).
func (e *Engine) backOff(k qkey, s *qstate, off int64, d delivery, nowMs int64) bool {
	until, ok := e.backoffUntil(k, off, d)
	if !ok || until <= nowMs {
		return false
	}
	d.popTime, d.invisible, d.backoff = d.deadline(), until-d.deadline(), true
	s.inflight[off] = d
	e.modes.Moved(k.group, k.topic, until)
	e.m.BackedOff.Add(1)
	en := entry{kind: 'B', key: k, off: off, popTime: d.popTime, invisible: d.invisible, attempt: d.attempt}
	e.record([]entry{en}, func(err error) {
		if err != nil { // the timer falls back on the stage's heap (revive.go); a restart computes it again
			e.opts.Logger.Warn().Err(err).Str("group", k.group).Str("topic", k.topic).Int32("queue", k.queue).
				Int64("offset", off).Msg("pop: a back-off's journal entry or timer was not stored")
		}
	})
	return true
}

// RetryPolicyFunc answers a group's retry policy and whether the group set
// one (meta.SubscriptionGroupConfig.RetryPolicy, !Default).
type RetryPolicyFunc func(group string) (meta.RetryPolicy, bool)
