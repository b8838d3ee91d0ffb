package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// TimerBackend is what the console knows of pending timers per topic: the
// broker API's timer listing and counts (actors/broker ListTimers,
// TimerCounts).
type TimerBackend interface {
	// TopicTimers is one page of topic's pending timer messages after
	// cursor ("" for the first page), in due order.
	TopicTimers(ctx context.Context, c Credentials, topic, cursor string, limit int) (TimerPage, error)
	// TimerCounts is the pending timers by topic, POP deadlines apart.
	TimerCounts(ctx context.Context, c Credentials) (TimerCounts, error)
}

// TimerPage is one page of a topic's pending timers.
type TimerPage struct {
	Timers []PendingTimer
	// Next is the cursor of the next page; More reports whether timers may
	// follow.
	Next string
	More bool
	// Scanned is how many pending timers of every topic were examined.
	Scanned int
}

// PendingTimer is one pending timer message.
type PendingTimer struct {
	Due         time.Time
	UniqKey     string // the message id the producer got
	OffsetMsgID string // the stored timer message's id (what cancel takes)
	Keys        []string
	Tags        string
	BodySize    int
	Queue       string
	Schedule    string // a recurring timer's schedule (Due is its next fire), else ""
	Seq         int64  // that next fire's sequence number
}

// TimerCounts is the pending timers by topic.
type TimerCounts struct {
	Topics       map[string]int64
	PopDeadlines int64 // POP invisibility deadlines on the wheel (no topic's timers)
	Complete     bool  // false: more pending timers than one count examines; the counts are lower bounds
}

// topicTimersPage is the page size of a topic's timer list.
const topicTimersPage = 20

// topicTimers is the topic page's timer section.
type topicTimers struct {
	Page   TimerPage
	Count  int64 // pending timers of the topic (a lower bound unless Exact)
	Exact  bool
	Cursor string // this page's cursor ("" first)
	First  bool
	Err    string
}

// topicTimersOf fills the timer section of topic's page (cursor from the
// "timers" query parameter); a failure shows in the section, not the page.
func (c *Console) topicTimersOf(ctx context.Context, r *http.Request, ss session, topic string) *topicTimers {
	tt := &topicTimers{Cursor: r.URL.Query().Get("timers")}
	tt.First = tt.Cursor == ""
	p, err := c.b.TopicTimers(ctx, ss.creds, topic, tt.Cursor, topicTimersPage)
	if err != nil {
		tt.Err = err.Error()
		return tt
	}
	tt.Page = p
	if cnt, err := c.b.TimerCounts(ctx, ss.creds); err == nil {
		tt.Count, tt.Exact = cnt.Topics[topic], cnt.Complete
	}
	return tt
}

// addTimerCounts sets each topic's pending timers (silently none when the
// counts cannot be had: the list still shows).
func (c *Console) addTimerCounts(ctx context.Context, ss session, ts []Topic) {
	cnt, err := c.b.TimerCounts(ctx, ss.creds)
	if err != nil {
		return
	}
	for i := range ts {
		ts[i].PendingTimers = cnt.Topics[ts[i].Name]
	}
}

// fmtUntil says how far ahead t is from now: "in 3h 2m", "in 45s", "due".
func fmtUntil(t, now time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return "due"
	}
	if d < time.Second {
		return "in <1s"
	}
	parts := []struct {
		n    int64
		unit string
	}{{int64(d / (24 * time.Hour)), "d"}, {int64(d/time.Hour) % 24, "h"}, {int64(d/time.Minute) % 60, "m"}, {int64(d/time.Second) % 60, "s"}}
	var out []string
	for _, p := range parts {
		if p.n > 0 || len(out) > 0 {
			out = append(out, strconv.FormatInt(p.n, 10)+p.unit)
		}
		if len(out) == 2 {
			break
		}
	}
	for len(out) > 1 && strings.HasPrefix(out[len(out)-1], "0") {
		out = out[:len(out)-1]
	}
	return "in " + strings.Join(out, " ")
}

func init() {
	funcs["until"] = fmtUntil
	funcs["join"] = strings.Join
}
