package broker

// The send-path half of timer messages, for every front door: the rules
// live in actors/timer (plan.go: the longest delay, 365 days by default,
// --max-timer-delay), shared with the transaction stage and the send-back
// path; this file applies them to a send.

import (
	"strings"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TimerLimits are the broker's timer settings.
func (b *Broker) TimerLimits() timer.Limits {
	return timer.Limits{Enabled: b.cfg.TimerEnabled, MaxDelay: b.cfg.MaxTimerDelay, MinScheduleInterval: b.cfg.ScheduleMinInterval}
}

// PlanTimer applies the timer rules to props (modified in place): where
// the message goes, or the refusal (BadDeliveryTime; Internal when timers
// are disabled).
func (b *Broker) PlanTimer(props map[string]string, nowMs int64) (timer.Plan, *Error) {
	p := timer.PlanSend(props, nowMs, b.TimerLimits())
	if p.Code == 0 {
		return p, nil
	}
	if !b.cfg.TimerEnabled && strings.Contains(p.Remark, "disabled") {
		return p, &Error{Status: Internal, Remark: p.Remark}
	}
	return p, &Error{Status: BadDeliveryTime, Remark: p.Remark}
}

// TimerStagesDown refuses a timer message while a stage that delivers
// timers is stopped for good (stored now, it would wait for a restart).
func (b *Broker) TimerStagesDown() *Error { return stagesDown(b.send.timers) }

// applyTimer sends a single message carrying a delay to the timer topic
// (props rewritten), or refuses it.
func (b *Broker) applyTimer(props map[string]string, plan *sendPlan) *Error {
	p, err := b.PlanTimer(props, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	if !p.Timer {
		return nil
	}
	if err := b.TimerStagesDown(); err != nil {
		return err
	}
	if _, cancel := props[message.PropTimerDelUniqKey]; !cancel {
		plan.recallDueMs = p.DueMs
	}
	plan.topic, plan.queueID = timer.ToTimerTopic(props, p.DueMs, plan.topic, plan.queueID)
	return nil
}
