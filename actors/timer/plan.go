package timer

// The send-path half of timer messages: RocketMQ's transformation of a
// message carrying DELAY, TIMER_DELAY_SEC, TIMER_DELAY_MS or
// TIMER_DELIVER_MS into a message of rmq_sys_wheel_timer (queue 0) with its
// real topic and queue saved in REAL_TOPIC / REAL_QID and its due time in
// TIMER_OUT_MS. The request router applies it to sends and send-backs, the
// transaction stage to a committed transactional message (a timer counts
// from the commit).
//
// Precedence (as RocketMQ): DELAY level > 0 wins and the TIMER_* properties
// are dropped; otherwise TIMER_DELAY_SEC, then TIMER_DELAY_MS, then
// TIMER_DELIVER_MS. Unlike RocketMQ the due time is kept to the
// millisecond (no rounding down to a 1 s slot), the maximum delay is
// configurable (default 365 days), and a message already due is stored as
// an ordinary message at once.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/storage/message"
)

// delayLevels are RocketMQ's 18 classic delay levels.
var delayLevels = [...]time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute, 6 * time.Minute,
	7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour,
}

// DelayLevel returns the delay of a classic level (1..18; higher levels are
// clamped to 18).
func DelayLevel(level int) time.Duration {
	if level < 1 {
		return 0
	}
	return delayLevels[min(level, len(delayLevels))-1]
}

// Limits are the broker settings a plan honours.
type Limits struct {
	// Enabled accepts timer messages (else they are refused).
	Enabled bool
	// MaxDelay is the longest accepted delay.
	MaxDelay time.Duration
	// MinScheduleInterval is the shortest accepted interval between two
	// fires of a recurring timer (0: schedule.DefaultMinInterval).
	MinScheduleInterval time.Duration
}

// Plan says where a single message goes.
type Plan struct {
	// Timer: the message is stored under the timer topic.
	Timer bool
	// DueMs is its TIMER_OUT_MS.
	DueMs int64
	// Code, when non-zero, refuses the message with this response code.
	Code   int32
	Remark string
}

// PlanSend applies the transformation rules to props (modified in place:
// DELAY > 0 removes the TIMER_* properties).
func PlanSend(props map[string]string, nowMs int64, lim Limits) Plan {
	if _, done := props[message.PropTimerOutMS]; done {
		return Plan{} // already transformed once (e.g. a re-sent timer message)
	}
	delete(props, schedule.PropPrevMs) // only dequeue_put writes it (recur.go)
	if text, ok := props[schedule.Prop]; ok {
		return planSchedule(props, text, nowMs, lim)
	}
	if lv, ok := props[message.PropDelay]; ok {
		level, err := strconv.Atoi(lv)
		if err != nil {
			return Plan{Code: wirecode.MessageIllegal, Remark: fmt.Sprintf("delay level %q is not a number", lv)}
		}
		if level > 0 {
			delete(props, message.PropTimerDelaySec)
			delete(props, message.PropTimerDelayMS)
			delete(props, message.PropTimerDeliverMS)
			return planDue(props, nowMs+DelayLevel(level).Milliseconds(), nowMs, lim)
		}
	}
	parse := func(key string) (int64, bool, *Plan) {
		v, ok := props[key]
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, true, &Plan{Code: wirecode.MessageIllegal,
				Remark: fmt.Sprintf("timer message illegal: %s=%q must be a non-negative integer", key, v)}
		}
		return n, true, nil
	}
	if n, ok, bad := parse(message.PropTimerDelaySec); bad != nil {
		return *bad
	} else if ok {
		if n > lim.MaxDelay.Milliseconds()/1000+1 {
			return tooLate(lim)
		}
		return planDue(props, nowMs+n*1000, nowMs, lim)
	}
	if n, ok, bad := parse(message.PropTimerDelayMS); bad != nil {
		return *bad
	} else if ok {
		if n > lim.MaxDelay.Milliseconds()+1 {
			return tooLate(lim)
		}
		return planDue(props, nowMs+n, nowMs, lim)
	}
	if n, ok, bad := parse(message.PropTimerDeliverMS); bad != nil {
		return *bad
	} else if ok {
		return planDue(props, n, nowMs, lim)
	}
	if _, ok := props[message.PropTimerDelUniqKey]; ok {
		return Plan{Code: wirecode.MessageIllegal,
			Remark: "timer message illegal: a cancel (TIMER_DEL_UNIQKEY) needs the target's delivery time"}
	}
	return Plan{}
}

func tooLate(lim Limits) Plan {
	return Plan{Code: wirecode.MessageIllegal, Remark: fmt.Sprintf(
		"timer message illegal: the delay time should not be bigger than the max delay %dms", lim.MaxDelay.Milliseconds())}
}

// planDue decides for a computed due time.
func planDue(props map[string]string, dueMs, nowMs int64, lim Limits) Plan {
	if dueMs-nowMs > lim.MaxDelay.Milliseconds() {
		return tooLate(lim)
	}
	if dueMs <= nowMs {
		if _, cancel := props[message.PropTimerDelUniqKey]; cancel {
			return Plan{Code: wirecode.MessageIllegal,
				Remark: "timer message illegal: a cancel's delivery time must be in the future"}
		}
		return Plan{} // already due: an ordinary message, delivered at once
	}
	if !lim.Enabled {
		return Plan{Code: wirecode.SystemError, Remark: "timer messages are disabled on this broker"}
	}
	return Plan{Timer: true, DueMs: dueMs}
}

// ToTimerTopic rewrites props for the timer topic and returns the timer
// topic and queue the message is stored in.
func ToTimerTopic(props map[string]string, dueMs int64, topic string, queueID int32) (string, int32) {
	props[message.PropTimerOutMS] = strconv.FormatInt(dueMs, 10)
	props[message.PropRealTopic] = topic
	props[message.PropRealQueueID] = strconv.Itoa(int(queueID))
	return Topic, 0
}

// HasTimerProps reports whether props ask for a delay.
func HasTimerProps(props map[string]string) bool {
	for _, k := range []string{schedule.Prop, message.PropDelay, message.PropTimerDelaySec, message.PropTimerDelayMS,
		message.PropTimerDeliverMS, message.PropTimerDelUniqKey} {
		v, ok := props[k]
		if !ok {
			continue
		}
		if k == message.PropDelay {
			if n, err := strconv.Atoi(v); err == nil && n <= 0 {
				continue
			}
		}
		return true
	}
	return false
}

// planSchedule plans a recurring timer (recur.go): its first fire is the
// schedule's first after now, stored as a timer message with
// WHEEL_SCHEDULE_SEQ 1. A schedule cannot be combined with a delay or a
// cancel, and a text that does not parse, names an unknown zone, fires
// more often than the minimum interval or never is refused.
func planSchedule(props map[string]string, text string, nowMs int64, lim Limits) Plan {
	for _, k := range []string{message.PropTimerDelaySec, message.PropTimerDelayMS, message.PropTimerDeliverMS,
		message.PropTimerDelUniqKey} {
		if _, ok := props[k]; ok {
			return Plan{Code: wirecode.MessageIllegal, Remark: fmt.Sprintf("recurring timer illegal: %s cannot be combined with %s", schedule.Prop, k)}
		}
	}
	if lv, ok := props[message.PropDelay]; ok && lv != "0" {
		return Plan{Code: wirecode.MessageIllegal, Remark: fmt.Sprintf("recurring timer illegal: %s cannot be combined with DELAY", schedule.Prop)}
	}
	minimum := lim.MinScheduleInterval
	if minimum <= 0 {
		minimum = schedule.DefaultMinInterval
	}
	s, err := schedule.Parse(text, minimum, nowMs)
	if err != nil {
		return Plan{Code: wirecode.MessageIllegal, Remark: "recurring timer illegal: " + err.Error()}
	}
	props[schedule.Prop] = s.String()
	props[schedule.PropSeq] = "1"
	delete(props, schedule.PropPrevMs)
	p := planDue(props, s.Next(nowMs), nowMs, lim)
	if p.Code == 0 && !p.Timer {
		return Plan{Code: wirecode.MessageIllegal, Remark: "recurring timer illegal: no fire after now"}
	}
	return p
}
