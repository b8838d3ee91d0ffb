package main

// What the message index tells about a message, and about the state of a
// timer message.
//
// A timer message is stored twice at most: first under rmq_sys_wheel_timer
// (the copy the send returns as offsetMsgId; REAL_TOPIC, REAL_QID and its due
// time TIMER_OUT_MS in its properties), then, once due, under its real topic
// (a copy with TIMER_DEQUEUE_MS, the same UNIQ_KEY and TIMER_OUT_MS). A
// cancel from 'wheelctl cancel' is a third record under rmq_sys_wheel_timer
// with the same UNIQ_KEY and TIMER_DEL_UNIQKEY="<realTopic>+<uniqKey>". The
// index keys all three by UNIQ_KEY under the topic they are stored in, so:
//
//	delivered  a written-back copy exists under the real topic
//	cancelled  a cancel with the message's UNIQ_KEY exists
//	pending    neither, and the due time is ahead
//	unknown    neither, and the due time has passed: the copy may not be
//	           indexed yet, or a cancel sent by a client under a key of its
//	           own (the index cannot link it) suppressed it
//
// A cancel sent by a RocketMQ client carries a UNIQ_KEY of its own, so a
// message cancelled that way shows as pending until its due time.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Timer message states.
const (
	statePending   = "pending"
	stateDelivered = "delivered"
	stateCancelled = "cancelled"
	stateUnknown   = "unknown"
)

// located is a stored record and the broker that holds it.
type located struct {
	rec    message.Record
	props  map[string]string
	broker string // address
	name   string // broker name (the address when not known)
}

func newLocated(rec message.Record, broker, name string) located {
	if name == "" {
		name = broker
	}
	return located{rec: rec, props: message.DecodeProperties(rec.Properties), broker: broker, name: name}
}

// kind tells what a record is.
type kind int

const (
	kindPlain       kind = iota // an ordinary message
	kindTimer                   // a timer message waiting in rmq_sys_wheel_timer
	kindCancel                  // a cancel (TIMER_DEL_UNIQKEY) in rmq_sys_wheel_timer
	kindWrittenBack             // a timer message delivered to its real topic
)

func (l located) kind() kind {
	switch {
	case l.rec.Topic == timer.Topic && l.props[message.PropTimerDelUniqKey] != "":
		return kindCancel
	case l.rec.Topic == timer.Topic:
		return kindTimer
	case l.props[message.PropTimerDequeueMS] != "":
		return kindWrittenBack
	}
	return kindPlain
}

// uniq is the message id (UNIQ_KEY).
func (l located) uniq() string { return l.props[message.PropUniqKey] }

// topic is the topic the message was sent to (the real topic of a timer
// message).
func (l located) topic() string {
	if l.rec.Topic == timer.Topic && l.props[message.PropRealTopic] != "" {
		return l.props[message.PropRealTopic]
	}
	return l.rec.Topic
}

// msTime reads a millisecond property.
func (l located) msTime(key string) (time.Time, bool) {
	ms, err := strconv.ParseInt(l.props[key], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// offsetMsgID is the record's offset message id.
func (l located) offsetMsgID() string {
	return message.OffsetMsgID(l.rec.StoreHost, l.rec.PhysicalOffset)
}

// timerState is what the index tells about a timer message.
type timerState struct {
	Due       time.Time
	State     string
	Detail    string
	Delivered *located // the written-back copy, when found
	Cancel    *located // the cancel, when found
}

// assess decides the state of the timer message m (a timer copy or a
// written-back copy) from the records found under its UNIQ_KEY.
func assess(m located, related []located, now time.Time) timerState {
	var st timerState
	due, ok := m.msTime(message.PropTimerOutMS)
	if !ok {
		return timerState{State: stateUnknown, Detail: "no due time (TIMER_OUT_MS) in its properties"}
	}
	st.Due = due
	if sched, ok := m.props[schedule.Prop]; ok && m.kind() == kindTimer {
		return assessSchedule(m, related, sched, now)
	}
	realTopic, uniq := m.topic(), m.uniq()
	if m.kind() == kindWrittenBack {
		st.Delivered = &m
	}
	for i := range related {
		r := &related[i]
		switch {
		case st.Delivered == nil && r.kind() == kindWrittenBack && r.rec.Topic == realTopic && r.uniq() == uniq &&
			r.props[message.PropTimerOutMS] == m.props[message.PropTimerOutMS]:
			st.Delivered = r
		case st.Cancel == nil && r.kind() == kindCancel && uniq != "" &&
			r.props[message.PropTimerDelUniqKey] == realTopic+"+"+uniq:
			st.Cancel = r
		}
	}
	switch {
	case st.Delivered != nil:
		st.State = stateDelivered
		d := st.Delivered
		at := time.UnixMilli(d.rec.StoreTimestamp)
		if deq, ok := d.msTime(message.PropTimerDequeueMS); ok {
			at = deq
		}
		st.Detail = "written back to " + d.rec.Topic + " queue " + strconv.Itoa(int(d.rec.QueueID)) + " offset " +
			strconv.FormatInt(d.rec.QueueOffset, 10) + " at " + at.UTC().Format(timeLayout) + " (" +
			string(signed(at.Sub(due))) + " after due), offsetMsgId " + d.offsetMsgID()
		if st.Cancel != nil {
			st.Detail += "; a cancel was stored too, too late"
		}
	case st.Cancel != nil:
		st.State = stateCancelled
		st.Detail = "cancel stored at " + time.UnixMilli(st.Cancel.rec.StoreTimestamp).UTC().Format(timeLayout) +
			", offsetMsgId " + st.Cancel.offsetMsgID()
		if due.After(now) {
			st.Detail += "; it will not be delivered"
		}
	case due.After(now):
		st.State = statePending
		st.Detail = "in the timer wheel, due in " + due.Sub(now).Round(time.Millisecond).String()
	default:
		st.State = stateUnknown
		st.Detail = "due " + now.Sub(due).Round(time.Millisecond).String() + " ago but no delivered copy in the index " +
			"(not indexed yet, or cancelled by a client's own cancel message, which the index cannot link)"
	}
	return st
}

// assessSchedule decides the state of a recurring timer (docs/timer.md,
// "Recurring timers") from its timer-topic records found under its
// UNIQ_KEY: the latest is its pending fire; a cancel ends it.
func assessSchedule(m located, related []located, sched string, now time.Time) timerState {
	latest := m
	realTopic, uniq := m.topic(), m.uniq()
	var cancel *located
	for i := range related {
		r := &related[i]
		switch {
		case r.kind() == kindTimer && r.topic() == realTopic && r.uniq() == uniq:
			if d, ok := r.msTime(message.PropTimerOutMS); ok {
				if cur, _ := latest.msTime(message.PropTimerOutMS); d.After(cur) {
					latest = *r
				}
			}
		case r.kind() == kindCancel && uniq != "" && r.props[message.PropTimerDelUniqKey] == realTopic+"+"+uniq:
			if cancel == nil || r.rec.StoreTimestamp > cancel.rec.StoreTimestamp {
				cancel = r
			}
		}
	}
	due, _ := latest.msTime(message.PropTimerOutMS)
	st := timerState{Due: due}
	seq := latest.props[schedule.PropSeq]
	switch {
	case cancel != nil:
		st.State = stateCancelled
		st.Detail = fmt.Sprintf("recurring timer %q cancelled at %s (offsetMsgId %s)",
			sched, time.UnixMilli(cancel.rec.StoreTimestamp).UTC().Format(timeLayout), cancel.offsetMsgID())
		if latest.offsetMsgID() != m.offsetMsgID() {
			// The pending record the cancel met: that fire and every later
			// one do not happen. (A schedule's cancel stores one cancel
			// record under its key, and a look-up answers the newest 32
			// records: the cancel and the next-fire records before it.)
			st.Detail += fmt.Sprintf("; fire %s (due %s) and the later ones do not happen", seq, due.UTC().Format(timeLayout))
		}
	case due.After(now):
		st.State = statePending
		st.Detail = fmt.Sprintf("recurring timer %q: fire %s due in %s (offsetMsgId %s)", sched, seq,
			due.Sub(now).Round(time.Millisecond), latest.offsetMsgID())
	default:
		st.State = stateUnknown
		st.Detail = fmt.Sprintf("recurring timer %q: fire %s was due %s ago; the index has no later one yet", sched, seq,
			now.Sub(due).Round(time.Millisecond))
	}
	return st
}
