package router

// The send-path half of timer messages: RocketMQ's transformation of a
// message carrying DELAY, TIMER_DELAY_SEC, TIMER_DELAY_MS or
// TIMER_DELIVER_MS into a message of rmq_sys_wheel_timer (queue 0) with its
// real topic and queue saved in REAL_TOPIC / REAL_QID and its due time in
// TIMER_OUT_MS.
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

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// timerStages are the stages a timer message needs to be delivered.
var timerStages = []string{timer.StageEnqueueGet, timer.StageEnqueuePut, timer.StageDequeueGet,
	timer.StageDequeueMessage, timer.StageDequeuePut}

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

// timerPlan says where a single message goes.
type timerPlan struct {
	timer   bool  // stored under the timer topic
	dueMs   int64 // TIMER_OUT_MS
	code    int32 // non-zero: refuse with this code
	remark  string
	cleaned bool // properties were changed (DELAY wins over TIMER_*)
}

// planTimer applies the transformation rules to props (modified in place).
func (r *Router) planTimer(props map[string]string, nowMs int64) timerPlan {
	if _, done := props[message.PropTimerOutMS]; done {
		return timerPlan{} // already transformed once (e.g. a re-sent timer message)
	}
	var dueMs int64
	if lv, ok := props[message.PropDelay]; ok {
		level, err := strconv.Atoi(lv)
		if err != nil {
			return timerPlan{code: remoting.MessageIllegal, remark: fmt.Sprintf("delay level %q is not a number", lv)}
		}
		if level > 0 {
			delete(props, message.PropTimerDelaySec)
			delete(props, message.PropTimerDelayMS)
			delete(props, message.PropTimerDeliverMS)
			dueMs = nowMs + DelayLevel(level).Milliseconds()
			return r.planDue(props, dueMs, nowMs)
		}
	}
	parse := func(key string) (int64, bool, *timerPlan) {
		v, ok := props[key]
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, true, &timerPlan{code: remoting.MessageIllegal,
				remark: fmt.Sprintf("timer message illegal: %s=%q must be a non-negative integer", key, v)}
		}
		return n, true, nil
	}
	if n, ok, bad := parse(message.PropTimerDelaySec); bad != nil {
		return *bad
	} else if ok {
		if n > r.cfg.MaxTimerDelay.Milliseconds()/1000+1 {
			return r.tooLate()
		}
		return r.planDue(props, nowMs+n*1000, nowMs)
	}
	if n, ok, bad := parse(message.PropTimerDelayMS); bad != nil {
		return *bad
	} else if ok {
		if n > r.cfg.MaxTimerDelay.Milliseconds()+1 {
			return r.tooLate()
		}
		return r.planDue(props, nowMs+n, nowMs)
	}
	if n, ok, bad := parse(message.PropTimerDeliverMS); bad != nil {
		return *bad
	} else if ok {
		return r.planDue(props, n, nowMs)
	}
	if _, ok := props[message.PropTimerDelUniqKey]; ok {
		return timerPlan{code: remoting.MessageIllegal,
			remark: "timer message illegal: a cancel (TIMER_DEL_UNIQKEY) needs the target's delivery time"}
	}
	return timerPlan{}
}

func (r *Router) tooLate() timerPlan {
	return timerPlan{code: remoting.MessageIllegal, remark: fmt.Sprintf(
		"timer message illegal: the delay time should not be bigger than the max delay %dms",
		r.cfg.MaxTimerDelay.Milliseconds())}
}

// planDue decides for a computed due time.
func (r *Router) planDue(props map[string]string, dueMs, nowMs int64) timerPlan {
	if dueMs-nowMs > r.cfg.MaxTimerDelay.Milliseconds() {
		return r.tooLate()
	}
	if dueMs <= nowMs {
		if _, cancel := props[message.PropTimerDelUniqKey]; cancel {
			return timerPlan{code: remoting.MessageIllegal,
				remark: "timer message illegal: a cancel's delivery time must be in the future"}
		}
		return timerPlan{} // already due: an ordinary message, delivered at once
	}
	if !r.cfg.TimerEnabled {
		return timerPlan{code: remoting.SystemError, remark: "timer messages are disabled on this broker"}
	}
	return timerPlan{timer: true, dueMs: dueMs}
}

// toTimerTopic rewrites props for the timer topic.
func toTimerTopic(props map[string]string, plan timerPlan, topic string, queueID int32) (string, int32) {
	props[message.PropTimerOutMS] = strconv.FormatInt(plan.dueMs, 10)
	props[message.PropRealTopic] = topic
	props[message.PropRealQueueID] = strconv.Itoa(int(queueID))
	return timer.Topic, 0
}

// hasTimerProps reports whether raw properties ask for a delay.
func hasTimerProps(props map[string]string) bool {
	for _, k := range []string{message.PropDelay, message.PropTimerDelaySec, message.PropTimerDelayMS,
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
