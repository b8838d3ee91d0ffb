package timer

import (
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// rebuild rebuilds a due timer's message (raw, its stored record) for its
// real topic and queue, as RocketMQ's dequeue does: REAL_TOPIC/REAL_QID name
// the destination, TIMER_ENQUEUE_MS and TIMER_DEQUEUE_MS are added, DELAY is
// removed; body, flags, born and store hosts, reconsume times and UNIQ_KEY
// are kept. reason is non-empty when the message cannot be delivered.
func rebuild(raw []byte, t timerwheel.Timer, nowMs int64) (put, string) {
	var b rebuilder
	return b.rebuild(raw, t, nowMs)
}

// rebuilder rebuilds the messages of a batch: the records go into one
// buffer (arena) for the batch, the properties are scanned once without a
// map, and topic names are shared, so a message costs no allocation in the
// common case (the stored properties plus the two timer properties).
type rebuilder struct {
	ended  []string // schedules that ended in this batch, for the log (recur.go)
	arena  []byte   // the batch's rebuilt records (a put aliases it)
	props  []byte   // scratch: the properties being built
	nprops []byte   // scratch: a next-fire record's properties (recur.go)
	slab   []put    // the batch's next-fire puts (a fire's put points into it)
	slabN  int      // the batch's timers: the slab's size when first needed
	topics [8]string
	next   int
}

// reset starts a batch of n timers whose records take about size bytes.
// The arena and slab are new for every batch: the puts of the previous
// batch alias them until dequeue_put is done with it.
func (b *rebuilder) reset(n, size int) {
	b.arena = make([]byte, 0, size)
	b.slab, b.slabN = nil, n
}

// topic returns name as a string, shared with earlier messages.
func (b *rebuilder) topic(name []byte) string {
	for _, t := range b.topics {
		if t == string(name) && t != "" {
			return t
		}
	}
	t := string(name)
	b.topics[b.next] = t
	b.next = (b.next + 1) % len(b.topics)
	return t
}

// rebuild rebuilds one message into the arena (see the package function).
func (b *rebuilder) rebuild(raw []byte, t timerwheel.Timer, nowMs int64) (put, string) {
	if raw == nil {
		return put{}, "unreadable"
	}
	l, err := message.Check(raw)
	if err != nil {
		return put{}, "undecodable"
	}
	stored := l.Properties(raw)
	var realTopic, realQID, uniq, outMs, sched, seqText []byte
	rewrite := false // DELAY or a timer property to replace: the map path
	for rest := stored; len(rest) > 0; {
		k, v, next, ok := message.NextProperty(rest)
		rest = next
		if !ok {
			continue
		}
		switch string(k) {
		case message.PropRealTopic:
			realTopic = v
		case message.PropRealQueueID:
			realQID = v
		case message.PropUniqKey:
			uniq = v
		case message.PropTimerOutMS:
			outMs = v
		case message.PropDelay, message.PropTimerEnqueueMS, message.PropTimerDequeueMS:
			rewrite = true
		case schedule.Prop:
			sched, rewrite = v, true
		case schedule.PropSeq:
			seqText = v
		}
	}
	qid, err := strconv.ParseInt(string(realQID), 10, 32)
	if len(realTopic) == 0 || err != nil || qid < 0 {
		return put{}, "no_real_topic"
	}
	if reason := staleReason(raw, l, t, realTopic, uniq, outMs); reason != "" {
		return put{}, reason
	}
	var num [20]byte
	var next *put
	var origUniq []byte // a schedule's UNIQ_KEY (in the arena): its fires get their own
	props := b.props[:0]
	switch {
	case sched != nil: // recur.go, without maps
		origUniq = b.keep(uniq)
		var fireUniq []byte
		props, fireUniq, next = b.recur(props, raw, l, stored, sched, seqText, origUniq, t, nowMs)
		uniq = fireUniq
	case !rewrite:
		// Common case: append the two properties to the stored ones.
		props = append(props, stored...)
		props = message.AppendPropertyBytes(props, message.PropTimerEnqueueMS, strconv.AppendInt(num[:0], t.AddedMs, 10))
		props = message.AppendPropertyBytes(props, message.PropTimerDequeueMS, strconv.AppendInt(num[:0], nowMs, 10))
	default:
		m := message.DecodeProperties(stored)
		m[message.PropTimerEnqueueMS] = strconv.FormatInt(t.AddedMs, 10)
		m[message.PropTimerDequeueMS] = strconv.FormatInt(nowMs, 10)
		delete(m, message.PropDelay)
		props = message.AppendProperties(props, m)
		uniq, outMs = []byte(m[message.PropUniqKey]), []byte(m[message.PropTimerOutMS])
	}
	b.props = props
	topic := b.topic(realTopic)
	out := message.Record{
		QueueID: int32(qid), Flag: message.PeekFlag(raw), SysFlag: l.SysFlag, BornTimestamp: message.PeekBornTimestamp(raw),
		BornHost: l.BornHost(raw), StoreTimestamp: nowMs, StoreHost: l.StoreHost(raw),
		ReconsumeTimes: l.ReconsumeTimes(raw), PreparedTransactionOffset: l.PreparedTransactionOffset(raw),
		Body: l.Body(raw), Topic: topic, Properties: props,
	}
	start := len(b.arena)
	arena, err := out.Encode(b.arena)
	if err != nil {
		return put{}, "unencodable"
	}
	b.arena = arena
	rec := arena[start:len(arena):len(arena)]
	propsAt := len(rec) - len(props)
	switch {
	case sched != nil:
		outMs = b.keepInt(t.DeliverMs) // uniq is the fire's, made by recur
	case !rewrite: // point at the copies inside the record (raw may be reused)
		uniq, outMs = within(rec[propsAt:], uniq, stored), within(rec[propsAt:], outMs, stored)
	}
	p := put{key: writer.QueueKey{Topic: topic, QueueID: int32(qid)}, record: rec, uniq: uniq, outMs: outMs,
		due: t.DeliverMs}
	if sched != nil {
		p.cancelUniq, p.cancelDue, p.next = origUniq, t.DeliverMs, next
		p.stopTopic, p.stopUniq = topic, origUniq
		if next != nil {
			next.stopTopic, next.stopUniq = topic, origUniq
		}
	}
	return p, ""
}

// RollTopic is where retention copies timer messages that wait longer than
// the CommitLog is kept (actors/retention.RollTopic): a rerouted timer's
// record lives there.
const RollTopic = "rmq_sys_wheel_roll"

// staleReason checks a released timer against the record it names before
// it is delivered, and returns "stale" when the record is not that timer's
// message: the record is in the timer topic at the timer's queue offset (or
// a retention copy of it), its TIMER_OUT_MS is the timer's due time, and
// its real topic and UNIQ_KEY hash to the timer's key hash. A crash that
// cut the CommitLog's tail leaves wheel entries whose offsets were then
// written again by other messages; without this check such an entry would
// deliver another message, at its own time (early, or a second time).
func staleReason(raw []byte, l message.Layout, t timerwheel.Timer, realTopic, uniq, outMs []byte) string {
	switch topic := l.Topic(raw); string(topic) {
	case Topic:
		if t.QueueOffset >= 0 && message.PeekQueueOffset(raw) != t.QueueOffset {
			return "stale"
		}
	case RollTopic:
	default:
		return "stale"
	}
	if due, err := strconv.ParseInt(string(outMs), 10, 64); err != nil || due != t.DeliverMs {
		return "stale"
	}
	if t.KeyHash != 0 && timerwheel.KeyHashBytes(realTopic, uniq) != t.KeyHash {
		return "stale"
	}
	return ""
}

// within returns the bytes of v, a sub-slice of src, at the same position
// in dst (a copy of src's bytes at its start).
func within(dst, v, src []byte) []byte {
	if v == nil {
		return nil
	}
	at := cap(src) - cap(v)
	return dst[at : at+len(v) : at+len(v)]
}

// identity names a written-back timer message: UNIQ_KEY and TIMER_OUT_MS.
func (p *put) identity() string { return string(p.uniq) + "@" + string(p.outMs) + p.suffix }

// scheduleCancelKey is the identity a cancel of a recurring timer's fire
// names: the schedule's UNIQ_KEY and the fire's due time.
func (p *put) scheduleCancelKey() string {
	return string(p.cancelUniq) + "@" + strconv.FormatInt(p.cancelDue, 10)
}

// stopID is the stop set's key of the put's schedule (stopKey; "" for a
// timer of no schedule).
func (p *put) stopID() string {
	if p.stopUniq == nil {
		return ""
	}
	return stopKey(p.stopTopic, string(p.stopUniq))
}

// cancelKey is the identity a cancel of the put's timer names.
func (p *put) cancelKey() string {
	if p.cancelUniq != nil {
		return p.scheduleCancelKey()
	}
	return p.identity()
}

// identOf names a written-back timer message: UNIQ_KEY and TIMER_OUT_MS.
func identOf(props map[string]string) string {
	return props[message.PropUniqKey] + "@" + props[message.PropTimerOutMS]
}

// cancelTarget reports whether a stored record is a timer cancel (a
// TIMER_DEL_UNIQKEY record of the timer topic, RealTopic+UniqKey) and
// returns the identity of the timer it cancels: its UNIQ_KEY and the
// cancel's TIMER_OUT_MS, which is the target's due time.
func cancelTarget(rec []byte) (string, bool) {
	topic, err := message.PeekTopic(rec)
	if err != nil || topic != Topic {
		return "", false
	}
	raw, err := message.PeekProperties(rec)
	if err != nil {
		return "", false
	}
	del, ok := message.LookupProperty(raw, message.PropTimerDelUniqKey)
	if !ok || del == "" {
		return "", false
	}
	out, ok := message.LookupProperty(raw, message.PropTimerOutMS)
	if !ok {
		return "", false
	}
	return del[strings.LastIndexByte(del, '+')+1:] + "@" + out, true
}

// isWrittenBack reports whether a stored record is a timer message written
// back by dequeue_put, and returns its identity.
func isWrittenBack(rec []byte) (string, bool) {
	topic, err := message.PeekTopic(rec)
	if err != nil {
		return "", false
	}
	raw, err := message.PeekProperties(rec)
	if err != nil {
		return "", false
	}
	if topic == Topic {
		return nextFireOf(raw) // a schedule's next fire (recur.go), or none
	}
	if _, ok := message.LookupProperty(raw, message.PropTimerDequeueMS); !ok {
		return "", false
	}
	return identOf(message.DecodeProperties(raw)), true
}
