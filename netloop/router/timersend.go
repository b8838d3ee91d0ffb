package router

// The send-path half of timer messages: the rules live in actors/timer
// (plan.go), shared with the transaction stage; this file adapts them to
// the router's configuration.

import (
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
)

// timerStages are the stages a timer message needs to be delivered (names
// of workers that were not spawned are skipped when resolved).
var timerStages = timer.StageNames()

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

// timerLimits are the broker's timer settings.
func (r *Router) timerLimits() timer.Limits {
	return timer.Limits{Enabled: r.cfg.TimerEnabled, MaxDelay: r.cfg.MaxTimerDelay}
}

// planTimer applies the transformation rules to props (modified in place).
func (r *Router) planTimer(props map[string]string, nowMs int64) timerPlan {
	p := timer.PlanSend(props, nowMs, r.timerLimits())
	return timerPlan{timer: p.Timer, dueMs: p.DueMs, code: p.Code, remark: p.Remark}
}

// applyTimer sends a single message carrying a delay to the timer topic
// (props rewritten), or refuses it.
func (r *Router) applyTimer(props map[string]string, topic string, queueID int32) (string, int32, *Refusal) {
	plan := r.planTimer(props, time.Now().UnixMilli())
	if plan.code != 0 {
		return "", 0, &Refusal{Code: plan.code, Remark: plan.remark}
	}
	if !plan.timer {
		return topic, queueID, nil
	}
	if ref := r.stagesDown(r.timerSts); ref != nil {
		return "", 0, ref // stored now, it would wait for a restart
	}
	topic, queueID = toTimerTopic(props, plan, topic, queueID)
	return topic, queueID, nil
}

// toTimerTopic rewrites props for the timer topic.
func toTimerTopic(props map[string]string, plan timerPlan, topic string, queueID int32) (string, int32) {
	return timer.ToTimerTopic(props, plan.dueMs, topic, queueID)
}

// hasTimerProps reports whether raw properties ask for a delay.
func hasTimerProps(props map[string]string) bool { return timer.HasTimerProps(props) }
