package broker

// Cancelling a recurring timer (docs/timer.md, "Recurring timers"): a
// schedule lives as one pending timer-topic record at a time, each fire
// writing the next (actors/timer/recur.go), and a cancel of one fire
// suppresses that fire and so everything after it. The series is a pure
// function of the schedule and any one fire, so the broker cancels every
// fire from the record it was given on, through a horizon ahead of now:
// whichever fire is pending when the cancels reach the wheel (even one
// written by a fire that happened while they were on their way) is among
// them. The horizon bounds how far the timer pipeline may lag behind the
// cancel for it to hold.

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/index"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/storage/message"
)

// Horizon of a schedule's cancel: every fire due within this long after
// the cancel, or within ScheduleCancelPeriods periods, whichever is more,
// at most ScheduleCancelMax fires.
const (
	ScheduleCancelHorizon = 2 * time.Minute
	ScheduleCancelPeriods = 3
	ScheduleCancelMax     = 512
)

// scheduleFires returns the due times to cancel for a schedule whose fire
// is due at dueMs: the fires after now from dueMs on (dueMs itself when it
// is still ahead) through the horizon.
func scheduleFires(text string, dueMs, nowMs int64) ([]int64, error) {
	s, err := schedule.Parse(text, 0, nowMs)
	if err != nil {
		return nil, fmt.Errorf("its schedule no longer parses: %w", err)
	}
	var dues []int64
	first := dueMs
	if first <= nowMs { // skip the fires already due (their next is pending)
		if ev := s.Every().Milliseconds(); ev > 0 {
			first += ((nowMs-first)/ev + 1) * ev
		} else if first = s.Next(nowMs); first == 0 {
			return nil, fmt.Errorf("schedule %q fires no more", text)
		}
	}
	second := s.Next(first)
	until := nowMs + ScheduleCancelHorizon.Milliseconds()
	if second > first {
		until = max(until, nowMs+ScheduleCancelPeriods*(second-first))
	}
	for d := first; d > 0 && len(dues) < ScheduleCancelMax; d = s.Next(d) {
		dues = append(dues, d)
		if d > until {
			break
		}
	}
	return dues, nil
}

// findSchedule looks up the timer-topic records of the message uniq of
// topic in the message index and calls then with the schedule of a
// recurring timer and the due time of one of its fires (found false: no
// schedule, or no index). then runs on the index stage, or the caller's
// goroutine without an index.
func (b *Broker) findSchedule(topic, uniq string, then func(text string, dueMs int64, found bool)) {
	st := b.p.Stage(index.StageName)
	if st == nil {
		then("", 0, false)
		return
	}
	st.Send(&index.Query{Topic: timer.Topic, Key: uniq, Unique: true, MaxNum: index.MaxQueryResults, Begin: 0, End: math.MaxInt64,
		Reply: func(got index.QueryResult) {
			var text string
			var due int64
			for _, rec := range got.Records {
				l, err := message.ParseLayout(rec)
				if err != nil {
					continue
				}
				props := message.DecodeProperties(l.Properties(rec))
				sched, ok := props[schedule.Prop]
				if _, cancel := props[message.PropTimerDelUniqKey]; !ok || cancel || props[message.PropRealTopic] != topic ||
					props[message.PropUniqKey] != uniq {
					continue
				}
				if d, err := strconv.ParseInt(props[message.PropTimerOutMS], 10, 64); err == nil && d > due {
					text, due = sched, d
				}
			}
			then(text, due, text != "")
		}})
}
