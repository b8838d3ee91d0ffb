package router

// The timer rules of the paths that still build their records here
// (send-back): the broker API's (actors/broker timer.go, over
// actors/timer's plan.go), in remoting's codes.

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
)

// DelayLevel returns the delay of a classic level (1..18; higher levels are
// clamped to 18).
func DelayLevel(level int) time.Duration { return timer.DelayLevel(level) }

// timerPlan says where a single message goes.
type timerPlan struct {
	timer  bool  // stored under the timer topic
	dueMs  int64 // TIMER_OUT_MS
	code   int32 // non-zero: refuse with this code
	remark string
}

// planTimer applies the broker's timer rules to props (modified in place).
func (r *Router) planTimer(props map[string]string, nowMs int64) timerPlan {
	p, err := r.core.PlanTimer(props, nowMs)
	if ref := refusalOf(err); ref != nil {
		return timerPlan{code: ref.Code, remark: ref.Remark}
	}
	return timerPlan{timer: p.Timer, dueMs: p.DueMs}
}

// toTimerTopic rewrites props for the timer topic.
func toTimerTopic(props map[string]string, plan timerPlan, topic string, queueID int32) (string, int32) {
	return timer.ToTimerTopic(props, plan.dueMs, topic, queueID)
}
