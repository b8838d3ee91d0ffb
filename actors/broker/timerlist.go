package broker

// ListTimers and TimerCounts: a topic's pending timer messages, page by
// page, and the pending timers per topic, for the console and the admin
// tools. Nothing is kept per topic: both walk the timer wheel's pending
// timers in due order (timerwheel.Store.Pending, cursor = the wheel's
// dequeue position) and read the message each one points at to learn its
// topic, on a pull reader (pull.Inspect), within a budget of timers per
// call. POP invisibility deadlines are timers of the system topic
// timer.PopReviveTopic: TimerCounts counts them apart, never as a topic's.

import (
	"sort"
	"strconv"
	"strings"

	"github.com/wheelmq/wheelmq/actors/pull"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// Listing limits.
const (
	// TimerListMax is the most timers one ListTimers page holds.
	TimerListMax = 500
	// TimerListScan is the most pending timers (of every topic) one
	// ListTimers call examines; a page that is not full by then ends
	// early, with More set and Next where the scan stopped.
	TimerListScan = 20_000
	// TimerCountScan is the default most pending timers one TimerCounts
	// call examines (each costs a CommitLog read).
	TimerCountScan = 200_000
)

// TimerListRequest asks for one page of a topic's pending timers.
type TimerListRequest struct {
	// Topic is the timers' (real) topic.
	Topic string
	// After is the Next of the previous page, timerwheel.FirstCursor for
	// the first.
	After timerwheel.Cursor
	// Limit is the page size, 1..TimerListMax (0: 50).
	Limit int
}

// PendingTimer is one pending timer message.
type PendingTimer struct {
	// DueMs is the delivery time (epoch ms); AddedMs when the wheel took it.
	DueMs, AddedMs int64
	// UniqKey is the message id the producer got (UNIQ_KEY).
	UniqKey string
	// OffsetMsgID is the id of the stored timer message (what CancelTimer
	// and wheelctl cancel --msg-id take); CommitLogOffset is its offset.
	OffsetMsgID     string
	CommitLogOffset int64
	// Keys and Tags are the message's KEYS (split) and TAGS.
	Keys []string
	Tags string
	// BodySize is the stored body's size in bytes.
	BodySize int
	// QueueID is the queue it will be delivered to.
	QueueID string
	// Pos is the timer's position in the wheel's dequeue order.
	Pos timerwheel.Cursor
	// Schedule is a recurring timer's WHEEL_SCHEDULE (DueMs is then its
	// next fire) and Seq that fire's WHEEL_SCHEDULE_SEQ; "" and 0 for a
	// one-off timer.
	Schedule string
	Seq      int64
}

// TimerList is one page of a topic's pending timers, in due order.
type TimerList struct {
	Timers []PendingTimer
	// Next is the cursor of the next page; More reports whether timers may
	// follow it.
	Next timerwheel.Cursor
	More bool
	// Scanned is the number of pending timers (of every topic) examined.
	Scanned int
}

// ListTimers answers one page of topic's pending timer messages: not yet
// released by the wheel and not cancelled. The caller needs SUB on the
// topic. done runs on a pull reader (or the caller's goroutine for a
// refusal) and must not block.
func (b *Broker) ListTimers(c Caller, req TimerListRequest, done func(*TimerList, *Error)) {
	if err := meta.ValidateTopic(req.Topic); err != nil {
		done(nil, Wrap(BadRequest, "topic name", err))
		return
	}
	switch {
	case req.Limit == 0:
		req.Limit = 50
	case req.Limit < 0 || req.Limit > TimerListMax:
		done(nil, Errorf(BadRequest, "page size %d outside 1..%d", req.Limit, TimerListMax))
		return
	}
	if err := b.authorize(c, Need{Kind: KindTopic, Name: req.Topic, Perm: Sub}); err != nil {
		done(nil, err)
		return
	}
	inspect(b, done, func(read func(int64) ([]byte, error)) (*TimerList, *Error) {
		return b.listTimers(req, read)
	})
}

// inspect runs fn on a pull reader and answers its result through done.
func inspect[T any](b *Broker, done func(T, *Error), fn func(read func(int64) ([]byte, error)) (T, *Error)) {
	if err := stagesDown(b.send.timers); err != nil {
		var zero T
		done(zero, err)
		return
	}
	b.p.Stage(pull.StageName).Send(&pull.Inspect{
		Fn:     func(read func(int64) ([]byte, error)) { done(fn(read)) },
		Failed: func(err error) { var zero T; done(zero, Wrap(Unavailable, "pull stage", err)) },
	})
}

// listTimers pages through the wheel for req's topic (on a pull reader).
func (b *Broker) listTimers(req TimerListRequest, read func(int64) ([]byte, error)) (*TimerList, *Error) {
	w := b.p.Wheel()
	res := &TimerList{Next: req.After}
	after := req.After
	for res.Scanned < TimerListScan {
		ts, next, more, err := w.Pending(after, 512)
		if err != nil {
			return nil, Wrap(Unavailable, "timer wheel", err)
		}
		for i, t := range ts {
			res.Scanned++
			pt, topic, ok := pendingOf(t, read)
			if !ok || topic != req.Topic {
				continue
			}
			res.Timers = append(res.Timers, pt)
			if len(res.Timers) == req.Limit {
				res.Next, res.More = t.Cursor(), more || i < len(ts)-1
				return res, nil
			}
		}
		after, res.Next, res.More = next, next, more
		if !more {
			return res, nil
		}
	}
	return res, nil
}

// pendingOf reads timer t's message: its listing and real topic (ok false
// when it cannot be read or is no client's timer message).
func pendingOf(t timerwheel.Timer, read func(int64) ([]byte, error)) (PendingTimer, string, bool) {
	rec, err := read(t.CommitLogOffset)
	if err != nil {
		return PendingTimer{}, "", false
	}
	m, _, err := message.Decode(rec)
	if err != nil || (m.Topic != timer.Topic && m.Topic != timer.RollTopic) {
		return PendingTimer{}, "", false
	}
	props := message.DecodeProperties(m.Properties)
	if _, cancel := props[message.PropTimerDelUniqKey]; cancel {
		return PendingTimer{}, "", false
	}
	pt := PendingTimer{DueMs: t.DeliverMs, AddedMs: t.AddedMs, UniqKey: props[message.PropUniqKey],
		OffsetMsgID: m.OffsetMsgID(), CommitLogOffset: t.CommitLogOffset, Tags: props[message.PropTags],
		BodySize: len(m.Body), QueueID: props[message.PropRealQueueID], Pos: t.Cursor()}
	if k := strings.Fields(props[message.PropKeys]); len(k) > 0 {
		pt.Keys = k
	}
	if sched, ok := props[schedule.Prop]; ok {
		pt.Schedule = sched
		pt.Seq, _ = strconv.ParseInt(props[schedule.PropSeq], 10, 64)
	}
	return pt, props[message.PropRealTopic], true
}

// TimerCountsRequest asks for the pending timers per topic.
type TimerCountsRequest struct {
	// Budget is the most pending timers examined (0: TimerCountScan).
	Budget int
	// NowMs and Edges (ms from NowMs, ascending) ask for the POP deadlines
	// by due time, as timerwheel.Store.PendingHistogram counts all timers,
	// so that a histogram can show client timers alone.
	NowMs int64
	Edges []int64
}

// TimerCounts is the pending timers by topic.
type TimerCounts struct {
	// Topics counts the pending client timer messages by real topic (only
	// the topics the caller may SUB on).
	Topics map[string]int64
	// PopDeadlines counts the POP invisibility deadlines on the wheel: no
	// client's timers; PopByDue splits them by the request's edges
	// (len(Edges)+1 counts, the last past the last edge).
	PopDeadlines int64
	PopByDue     []int64
	// Timers counts every topic's pending client timer messages (whatever
	// the caller may read) and ByDue splits them as PopByDue.
	Timers int64
	ByDue  []int64
	// Other counts wheel timers that are neither (unreadable messages).
	Other int64
	// Scanned is the pending timers examined; Complete reports whether
	// that was all of them (else the counts are lower bounds).
	Scanned  int
	Complete bool
}

// TimerCounts counts the pending timers by topic, POP deadlines apart.
// done runs on a pull reader and must not block.
func (b *Broker) TimerCounts(c Caller, req TimerCountsRequest, done func(*TimerCounts, *Error)) {
	if req.Budget <= 0 {
		req.Budget = TimerCountScan
	}
	if !sort.SliceIsSorted(req.Edges, func(i, j int) bool { return req.Edges[i] < req.Edges[j] }) {
		done(nil, Errorf(BadRequest, "edges not ascending"))
		return
	}
	inspect(b, done, func(read func(int64) ([]byte, error)) (*TimerCounts, *Error) {
		res, err := b.countTimers(req, read)
		if err != nil {
			return nil, err
		}
		for t := range res.Topics {
			if b.authorize(c, Need{Kind: KindTopic, Name: t, Perm: Sub}) != nil {
				delete(res.Topics, t)
			}
		}
		return res, nil
	})
}

// countTimers walks the wheel for TimerCounts (on a pull reader).
func (b *Broker) countTimers(req TimerCountsRequest, read func(int64) ([]byte, error)) (*TimerCounts, *Error) {
	res := &TimerCounts{Topics: map[string]int64{}, PopByDue: make([]int64, len(req.Edges)+1), ByDue: make([]int64, len(req.Edges)+1)}
	after := timerwheel.FirstCursor
	for res.Scanned < req.Budget {
		ts, next, more, err := b.p.Wheel().Pending(after, min(4096, req.Budget-res.Scanned))
		if err != nil {
			return nil, Wrap(Unavailable, "timer wheel", err)
		}
		for _, t := range ts {
			res.Scanned++
			_, topic, ok := pendingOf(t, read)
			d := t.EffMs - req.NowMs
			bucket := sort.Search(len(req.Edges), func(i int) bool { return req.Edges[i] > d })
			switch {
			case !ok:
				res.Other++
			case topic == timer.PopReviveTopic:
				res.PopDeadlines++
				res.PopByDue[bucket]++
			default:
				res.Topics[topic]++
				res.Timers++
				res.ByDue[bucket]++
			}
		}
		after = next
		if !more {
			res.Complete = true
			break
		}
	}
	return res, nil
}
