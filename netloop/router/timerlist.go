package router

// LIST_TIMER_MESSAGES (3502, a wheelmq extension used by wheelctl timers):
// one page of a topic's pending timer messages, recurring schedules
// included, as JSON (remoting.TimerListBody). A codec over the broker
// API's ListTimers (actors/broker timerlist.go). extFields: topic, after
// (the previous page's next, blank for the first page), limit (1..500,
// blank: 50). Answers: 0 and the page; 17 TOPIC_NOT_EXIST for a topic
// this broker does not have; 29 for a bad cursor or limit. The ACL rule
// (SUB on topic) is checked before, as the console's listing needs.

import (
	"encoding/json"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/timerwheel"
)

func (r *Router) handleListTimers(c *netloop.Conn, cmd *remoting.Command) *Refusal {
	p := fieldParser{cmd: cmd}
	topic := p.str("topic")
	limit := p.intBits("limit", false, 0, 32)
	if ref := p.refusal(); ref != nil {
		return ref
	}
	if limit < 0 || limit > broker.TimerListMax {
		return refuse(remoting.InvalidParameter, "limit %d outside 1..%d", limit, broker.TimerListMax)
	}
	after := timerwheel.FirstCursor
	if s := cmd.Field("after"); s != "" {
		ms, seq, err := remoting.ParseTimerCursor(s)
		if err != nil {
			return refuse(remoting.InvalidParameter, "after: %v", err)
		}
		after = timerwheel.Cursor{Ms: ms, Seq: seq}
	}
	if _, ok := r.topicView.Get(topic); !ok {
		return refuse(remoting.TopicNotExist, "No topic in this broker. topic: %s", topic)
	}
	r.core.ListTimers(callerOf(c, cmd), broker.TimerListRequest{Topic: topic, After: after, Limit: int(limit)},
		func(l *broker.TimerList, err *broker.Error) {
			if ref := refusalOf(err); ref != nil {
				r.reply(c, cmd, ref.Code, ref.Remark)
				return
			}
			body, jerr := json.Marshal(timerListBody(l))
			r.sendBody(c, cmd, body, jerr)
		})
	return nil
}

// timerListBody is l as the answer's body.
func timerListBody(l *broker.TimerList) remoting.TimerListBody {
	b := remoting.TimerListBody{Timers: make([]remoting.TimerListEntry, 0, len(l.Timers)), More: l.More, Scanned: l.Scanned}
	if l.More {
		b.Next = remoting.FormatTimerCursor(l.Next.Ms, l.Next.Seq)
	}
	for _, t := range l.Timers {
		b.Timers = append(b.Timers, remoting.TimerListEntry{DueMs: t.DueMs, AddedMs: t.AddedMs, MsgID: t.UniqKey,
			OffsetMsgID: t.OffsetMsgID, Keys: t.Keys, Tags: t.Tags, BodySize: t.BodySize, QueueID: t.QueueID,
			Schedule: t.Schedule, Seq: t.Seq})
	}
	return b
}
