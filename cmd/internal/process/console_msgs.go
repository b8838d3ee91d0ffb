package process

// What the console's message look-up shows of the records it finds: one
// entry per message (a delayed message's timer copy and its write-back
// are one message), and the timer properties as times.

import (
	"strconv"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage/message"
)

// oneEntryPerMessage drops the written-back copy of a delayed message
// whose timer copy was found too (same UNIQ_KEY, stored in the timer's
// REAL_TOPIC): the timer copy's life already shows the write-back and its
// consumers, and its offset message id is the one to cancel with. A look-up
// by key found both, listing each delayed message twice (40 entries for
// 20 sends).
func oneEntryPerMessage(recs []message.Record) []message.Record {
	type id struct{ topic, uniq string }
	timers := map[id]bool{}
	for _, r := range recs {
		if r.Topic != timer.Topic {
			continue
		}
		p := message.DecodeProperties(r.Properties)
		if u := p[message.PropUniqKey]; u != "" && p[message.PropTimerDelUniqKey] == "" {
			timers[id{p[message.PropRealTopic], u}] = true
		}
	}
	if len(timers) == 0 {
		return recs
	}
	out := recs[:0]
	for _, r := range recs {
		if r.Topic != timer.Topic {
			p := message.DecodeProperties(r.Properties)
			if timers[id{r.Topic, p[message.PropUniqKey]}] {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// timeProps are the properties holding epoch milliseconds.
var timeProps = map[string]bool{message.PropTimerDeliverMS: true, message.PropTimerOutMS: true,
	message.PropTimerEnqueueMS: true, message.PropTimerDequeueMS: true, "__STARTDELIVERTIME": true}

// readableProps returns props with the epoch-millisecond timer properties
// shown as UTC times, the raw value kept in parentheses.
func readableProps(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		out[k] = v
		if !timeProps[k] {
			continue
		}
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			out[k] = time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000 UTC") + " (" + v + ")"
		}
	}
	return out
}
