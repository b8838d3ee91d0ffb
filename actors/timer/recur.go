package timer

// Recurring timers (docs/timer.md, "Recurring timers"): a timer message
// with a WHEEL_SCHEDULE property fires again and again. Each fire is one
// release of one wheel record, like any timer's; dequeue_put writes back
// two records for it in the same batch: the fired message (real topic, a
// UNIQ_KEY of its own, WHEEL_SCHEDULE_SEQ and WHEEL_SCHEDULE_FIRE_MS) and
// the schedule's next-fire record, a copy of the timer-topic message with
// the next due time and sequence number and WHEEL_SCHEDULE_PREV_MS. The
// schedule's state is thus only ever that one pending record in the
// CommitLog, which replicates like any timer; the batch is acknowledged
// once both are written, and a replay after a crash skips each of the two
// that the copy scan finds (isWrittenBack knows both kinds), so a fire is
// neither lost nor doubled and neither is the next. A cancel of the fire
// (by the schedule's UNIQ_KEY and the fire's due time) suppresses both:
// the schedule ends. The wheel applies a cancel to the records it holds
// while the cancel's window lasts; a next-fire record that reaches the
// wheel after that (an enqueue side behind) would escape it, so a
// schedule's cancel also writes a stop record (stops.go) and dequeue_put
// writes neither record of a fire of a stopped schedule.

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// nextSuffix tells a next-fire record's identity from a fire's.
const nextSuffix = "#next"

// propRollTimes is retention's copy counter (actors/retention), dropped
// from a next-fire record (a new message).
const propRollTimes = "TIMER_ROLL_TIMES"

// schedules caches parsed schedule texts for the dequeue workers.
var schedules = struct {
	sync.Mutex
	m map[string]*schedule.Schedule
}{m: map[string]*schedule.Schedule{}}

// compiled returns the parsed schedule text (cached: a hit makes no
// string).
func compiled(text []byte) (*schedule.Schedule, error) {
	schedules.Lock()
	s, ok := schedules.m[string(text)]
	schedules.Unlock()
	if ok {
		return s, nil
	}
	s, err := schedule.Parse(string(text), 0, 0)
	if err != nil {
		return nil, err
	}
	schedules.Lock()
	if len(schedules.m) >= 4096 {
		clear(schedules.m)
	}
	schedules.m[string(text)] = s
	schedules.Unlock()
	return s, nil
}

// FireUniqKey is the UNIQ_KEY of a schedule's fire seq due at dueMs (its
// message id), the same on every broker that fires it: 16 bytes in the
// Java client's layout, so that tools reading the time out of an id
// (MessageClientIDSetter.getNearlyTimeFromID, used by message queries by
// id) find it near the fire: bytes 10-13 are the due time's milliseconds
// since the start of its month (UTC), the other 12 the first bytes of
// SHA-256("<origin>#<seq>"). 32 upper-case hex digits.
func FireUniqKey(origin string, seq, dueMs int64) string {
	var id [32]byte
	return string(appendFireUniqKey(id[:0], []byte(origin), seq, dueMs))
}

// appendFireUniqKey appends FireUniqKey(origin, seq, dueMs) to dst (no
// allocation for origins up to about 100 bytes).
func appendFireUniqKey(dst, origin []byte, seq, dueMs int64) []byte {
	var in [128]byte
	h := sha256.Sum256(strconv.AppendInt(append(append(in[:0], origin...), '#'), seq, 10))
	due := time.UnixMilli(dueMs).UTC()
	y, m, _ := due.Date()
	var id [16]byte
	copy(id[:10], h[:10])
	binary.BigEndian.PutUint32(id[10:14], uint32(dueMs-time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).UnixMilli()))
	copy(id[14:], h[10:12])
	const digits = "0123456789ABCDEF"
	for _, c := range id {
		dst = append(dst, digits[c>>4], digits[c&0xf])
	}
	return dst
}

// Properties a fire and a next-fire record drop from the stored ones (and
// set anew where they have a value).
var (
	fireDrops = []string{schedule.Prop, schedule.PropOf, message.PropUniqKey, schedule.PropSeq, schedule.PropFireMs, schedule.PropOrigin,
		schedule.PropPrevMs, propRollTimes, message.PropDelay, message.PropTimerEnqueueMS, message.PropTimerDequeueMS}
	nextDrops = []string{message.PropTimerOutMS, schedule.PropSeq, schedule.PropFireMs, schedule.PropOrigin,
		schedule.PropPrevMs, propRollTimes, message.PropDelay, message.PropTimerEnqueueMS, message.PropTimerDequeueMS}
)

// appendKept appends the pairs of the encoded properties stored whose key
// is not in fireDrops to fire, and those whose key is not in nextDrops to
// next (one scan, bytes copied, no map).
func appendKept(fire, next, stored []byte) ([]byte, []byte) {
	for rest := stored; len(rest) > 0; {
		k, v, after, ok := message.NextProperty(rest)
		rest = after
		if !ok || len(v) == 0 {
			continue
		}
		if !dropped(k, fireDrops) {
			fire = appendPair(fire, k, v)
		}
		if !dropped(k, nextDrops) {
			next = appendPair(next, k, v)
		}
	}
	return fire, next
}

// appendPair appends one encoded pair.
func appendPair(dst, k, v []byte) []byte {
	dst = append(dst, k...)
	dst = append(dst, message.NameValueSeparator)
	dst = append(dst, v...)
	return append(dst, message.PropertySeparator)
}

// dropped reports whether key k is in drop (no string made).
func dropped(k []byte, drop []string) bool {
	for _, d := range drop {
		if string(k) == d {
			return true
		}
	}
	return false
}

// keep appends v to the batch's arena and returns its copy there (what a
// put keeps must outlive the reader's buffers).
func (b *rebuilder) keep(v []byte) []byte {
	start := len(b.arena)
	b.arena = append(b.arena, v...)
	return b.arena[start:len(b.arena):len(b.arena)]
}

// keepInt is keep of a decimal number.
func (b *rebuilder) keepInt(n int64) []byte {
	start := len(b.arena)
	b.arena = strconv.AppendInt(b.arena, n, 10)
	return b.arena[start:len(b.arena):len(b.arena)]
}

// recur appends to props the properties of a schedule's fire (stored's
// without WHEEL_SCHEDULE, with the fire's own UNIQ_KEY, WHEEL_SCHEDULE_SEQ,
// _FIRE_MS, _ORIGIN and _OF (the schedule text) and the two timer
// properties) and returns them with the fire's UNIQ_KEY (in the arena) and
// the schedule's next-fire record, nil when the schedule ends (no later
// fire, or a text that no longer parses). seqText is the stored
// WHEEL_SCHEDULE_SEQ (nil: 1); origin (the schedule's UNIQ_KEY) is a copy
// in the arena. The next-fire record is encoded into the arena and its put
// comes from the batch's slab: a fire costs no allocation of its own.
func (b *rebuilder) recur(props, raw []byte, l message.Layout, stored, text, seqText, origin []byte,
	t timerwheel.Timer, nowMs int64) ([]byte, []byte, *put) {
	seq := int64(1)
	if seqText != nil {
		if n, err := strconv.ParseInt(string(seqText), 10, 64); err == nil && n >= 1 {
			seq = n
		}
	}
	var num [20]byte
	start := len(b.arena)
	b.arena = appendFireUniqKey(b.arena, origin, seq, t.DeliverMs)
	fireUniq := b.arena[start:len(b.arena):len(b.arena)]
	np := b.nprops[:0]
	props, np = appendKept(props, np, stored)
	props = message.AppendPropertyBytes(props, message.PropUniqKey, fireUniq)
	props = message.AppendPropertyBytes(props, schedule.PropSeq, strconv.AppendInt(num[:0], seq, 10))
	props = message.AppendPropertyBytes(props, schedule.PropFireMs, strconv.AppendInt(num[:0], t.DeliverMs, 10))
	props = message.AppendPropertyBytes(props, schedule.PropOrigin, origin)
	props = message.AppendPropertyBytes(props, schedule.PropOf, text) // not schedule.Prop: a fire sent again is no schedule
	props = message.AppendPropertyBytes(props, message.PropTimerEnqueueMS, strconv.AppendInt(num[:0], t.AddedMs, 10))
	props = message.AppendPropertyBytes(props, message.PropTimerDequeueMS, strconv.AppendInt(num[:0], nowMs, 10))
	s, err := compiled(text)
	if err != nil {
		b.ended = append(b.ended, string(origin)+": "+err.Error())
		return props, fireUniq, nil
	}
	nextMs := s.Next(t.DeliverMs)
	if nextMs <= t.DeliverMs {
		b.ended = append(b.ended, string(origin)+": "+string(text)+" fires no more")
		return props, fireUniq, nil
	}
	np = message.AppendPropertyBytes(np, message.PropTimerOutMS, strconv.AppendInt(num[:0], nextMs, 10))
	np = message.AppendPropertyBytes(np, schedule.PropSeq, strconv.AppendInt(num[:0], seq+1, 10))
	np = message.AppendPropertyBytes(np, schedule.PropPrevMs, strconv.AppendInt(num[:0], t.DeliverMs, 10))
	b.nprops = np
	rec := message.Record{
		QueueID: 0, Flag: message.PeekFlag(raw), SysFlag: l.SysFlag, BornTimestamp: message.PeekBornTimestamp(raw),
		BornHost: l.BornHost(raw), StoreTimestamp: nowMs, StoreHost: l.StoreHost(raw),
		ReconsumeTimes: l.ReconsumeTimes(raw), PreparedTransactionOffset: l.PreparedTransactionOffset(raw),
		Body: l.Body(raw), Topic: Topic, Properties: np,
	}
	start = len(b.arena)
	arena, err := rec.Encode(b.arena)
	if err != nil {
		b.ended = append(b.ended, string(origin)+": next fire unencodable: "+err.Error())
		return props, fireUniq, nil
	}
	b.arena = arena
	enc := arena[start:len(arena):len(arena)]
	if b.slab == nil {
		b.slab = make([]put, 0, max(b.slabN, 1))
	}
	b.slab = append(b.slab, put{key: writer.QueueKey{Topic: Topic}, record: enc, uniq: origin,
		outMs: b.keepInt(nextMs), due: nextMs, suffix: nextSuffix, cancelUniq: origin, cancelDue: t.DeliverMs})
	return props, fireUniq, &b.slab[len(b.slab)-1]
}

// nextFireOf reports whether a stored record is a schedule's next-fire
// record (timer topic, WHEEL_SCHEDULE_PREV_MS) and returns its identity.
func nextFireOf(raw []byte) (string, bool) {
	if _, ok := message.LookupProperty(raw, schedule.PropPrevMs); !ok {
		return "", false
	}
	return identOf(message.DecodeProperties(raw)) + nextSuffix, true
}
