package broker

// Cancelling a recurring timer (docs/timer.md, "Cancel, recall, listing"):
// a schedule lives as one pending timer-topic record at a time, each fire
// writing the next (actors/timer/recur.go). Its cancel is two records: a
// stop record in the system topic timer.StopTopic, naming the schedule by
// its real topic and original UNIQ_KEY, which the timer service reads in
// full at start and follows after, so that no later fire of the schedule
// is written however far the timer pipeline lags (actors/timer/stops.go);
// then an ordinary cancel (TIMER_DEL_UNIQKEY) of the schedule's first fire
// after now, which the wheel applies to the pending record (so the listing
// drops it at its due time, and tools see the cancel under the message's
// key).

import (
	"fmt"
	"math"
	"strconv"

	"github.com/wheelmq/wheelmq/actors/index"
	"github.com/wheelmq/wheelmq/actors/stats"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// pendingFire returns the due time of the first fire after now of a
// schedule whose fire is due at dueMs (dueMs itself when it is still
// ahead).
func pendingFire(text string, dueMs, nowMs int64) (int64, error) {
	s, err := schedule.Parse(text, 0, nowMs)
	if err != nil {
		return 0, fmt.Errorf("its schedule no longer parses: %w", err)
	}
	first := dueMs
	if first <= nowMs { // skip the fires already due (their next is pending)
		if ev := s.Every().Milliseconds(); ev > 0 {
			first += ((nowMs-first)/ev + 1) * ev
		} else if first = s.Next(nowMs); first == 0 {
			return 0, fmt.Errorf("schedule %q fires no more", text)
		}
	}
	return first, nil
}

// appendCancels appends cancel records to the timer topic; with a stop
// record (a schedule's cancel), that one first, to timer.StopTopic, and
// the cancels only once it is stored. reply gets the last append's result
// (or the first failure), on the writer's goroutine.
func (b *Broker) appendCancels(stop []byte, cancels [][]byte, reply func(writer.Result)) {
	push := func() {
		b.send.appends.Push(&writer.Append{Key: writer.QueueKey{Topic: timer.Topic}, Records: cancels, Kind: stats.KindSystem,
			Reply: reply})
	}
	if stop == nil {
		push()
		return
	}
	b.send.appends.Push(&writer.Append{Key: writer.QueueKey{Topic: timer.StopTopic}, Records: [][]byte{stop}, Kind: stats.KindSystem,
		Reply: func(res writer.Result) {
			if res.Err != nil {
				reply(res)
				return
			}
			push() // never blocks: safe on the writer's goroutine
		}})
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
