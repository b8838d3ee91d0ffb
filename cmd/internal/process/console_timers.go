package process

// The console's pending timers per topic: the broker API's ListTimers and
// TimerCounts (actors/broker/timerlist.go), and the POP deadlines taken out
// of the timer page's figures.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/timerwheel"
)

// TopicTimers is one page of topic's pending timers; the cursor is the
// wheel position "ms-seq" of the last timer of the previous page.
func (cb *consoleBackend) TopicTimers(ctx context.Context, c console.Credentials, topic, cursor string, limit int) (console.TimerPage, error) {
	var p console.TimerPage
	core, err := cb.core()
	if err != nil {
		return p, err
	}
	after, err := parseTimerCursor(cursor)
	if err != nil {
		return p, err
	}
	l, err := await(ctx, func(done func(*broker.TimerList, *broker.Error)) {
		core.ListTimers(cb.caller(c), broker.TimerListRequest{Topic: topic, After: after, Limit: limit}, done)
	})
	if err != nil {
		return p, err
	}
	p.More, p.Scanned = l.More, l.Scanned
	if l.More {
		p.Next = formatTimerCursor(l.Next)
	}
	for _, t := range l.Timers {
		p.Timers = append(p.Timers, console.PendingTimer{Due: time.UnixMilli(t.DueMs), UniqKey: t.UniqKey,
			OffsetMsgID: t.OffsetMsgID, Keys: t.Keys, Tags: t.Tags, BodySize: t.BodySize, Queue: t.QueueID,
			Schedule: t.Schedule, Seq: t.Seq})
	}
	return p, nil
}

// TimerCounts is the pending timers by topic (those the account may read).
func (cb *consoleBackend) TimerCounts(ctx context.Context, c console.Credentials) (console.TimerCounts, error) {
	n, err := cb.timerCounts(ctx, c, time.Now().UnixMilli(), nil, 0)
	if err != nil {
		return console.TimerCounts{}, err
	}
	return console.TimerCounts{Topics: n.Topics, PopDeadlines: n.PopDeadlines, Complete: n.Complete}, nil
}

// timerCounts asks the broker API for the counts, with the POP deadlines
// by edges from now, examining at most budget pending timers (0: the
// API's default). An answer is kept for countTTL: the timer page asks
// twice a load and refreshes every 2 s, and each count reads a CommitLog
// record per pending timer; a count that examined many timers is kept
// longer (a second more per 20,000 examined), so that a page left open
// rescans a large wheel only every few seconds.
func (cb *consoleBackend) timerCounts(ctx context.Context, c console.Credentials, now int64, edges []int64, budget int) (*broker.TimerCounts, error) {
	core, err := cb.core()
	if err != nil {
		return nil, err
	}
	key := fmt.Sprint(c.AccessKey, budget, edges)
	if n, ok := cb.counts.get(key, now); ok {
		return n, nil
	}
	n, err := await(ctx, func(done func(*broker.TimerCounts, *broker.Error)) {
		core.TimerCounts(cb.caller(c), broker.TimerCountsRequest{NowMs: now, Edges: edges, Budget: budget}, done)
	})
	if err == nil {
		cb.counts.put(key, now, n)
	}
	return n, err
}

// countTTL is how long a timer count answers again.
const countTTL = 2 * time.Second

// countCache keeps the latest timer counts by request (a handful of keys:
// the pages' edges and the accounts logged in).
type countCache struct {
	mu sync.Mutex
	m  map[string]countEntry // guarded by mu
}

type countEntry struct {
	at int64 // the request's now (ms)
	n  *broker.TimerCounts
}

func (c *countCache) get(key string, now int64) (*broker.TimerCounts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	ttl := countTTL + time.Duration(e.n.Scanned/20_000)*time.Second
	if now-e.at > ttl.Milliseconds() || now < e.at {
		return nil, false
	}
	return e.n, true
}

func (c *countCache) put(key string, now int64, n *broker.TimerCounts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 32 {
		c.m = map[string]countEntry{}
	}
	c.m[key] = countEntry{at: now, n: n}
}

// timerPageBudget is the most pending timers the timer page's count
// examines (the topic pages use the API's default).
const timerPageBudget = 20_000

// withoutPop makes the timer page's pending figures client timers only.
// The wheel's slot counts hold every timer record: POP invisibility
// deadlines (counted apart, in PopPending) and timers whose cancel is
// stored but not yet released. When the broker API's count examined every
// pending timer, the figures are its own (exact); otherwise the POP
// deadlines it found are taken out of the slot counts.
func (cb *consoleBackend) withoutPop(ctx context.Context, t *console.Timers, now int64, edges []int64) {
	minute := time.Minute.Milliseconds()
	all := append(slices.Clone(edges), minute) // the page's edges and the next minute's
	slices.Sort(all)
	all = slices.Compact(all)
	n, err := cb.timerCounts(ctx, console.Credentials{}, now, all, timerPageBudget)
	if err != nil {
		return
	}
	t.PopPending, t.PendingExact = n.PopDeadlines, n.Complete
	if n.Complete {
		t.Pending = n.Timers
		clear(t.Counts)
	} else {
		t.Pending = max(t.Pending-n.PopDeadlines, 0)
	}
	// Bucket j of all is [all[j-1], all[j]): fold it into the page's
	// buckets and the next minute.
	var soon int64
	for j := range n.PopByDue {
		lo := int64(math.MinInt64)
		if j > 0 {
			lo = all[j-1]
		}
		i := sort.Search(len(edges), func(i int) bool { return edges[i] > lo })
		c := -n.PopByDue[j]
		if n.Complete {
			c = n.ByDue[j]
		}
		if lo < minute {
			soon += c
		}
		if i < len(t.Counts) {
			t.Counts[i] = max(t.Counts[i]+c, 0)
		}
	}
	if n.Complete {
		t.DueNextMinute = soon
	} else {
		t.DueNextMinute = max(t.DueNextMinute+soon, 0)
	}
}

// pendingWithoutPop makes the Overview's timers pending client timer
// messages, as the timer page counts them (wheelmq_timer_pending counts
// every wheel record, POP deadlines included).
func (cb *consoleBackend) pendingWithoutPop(ctx context.Context, o *console.Overview) {
	if cb.n.broker == nil {
		return
	}
	var t console.Timers
	t.Pending = int64(o.TimersPending)
	cb.withoutPop(ctx, &t, time.Now().UnixMilli(), nil)
	o.TimersPending, o.PopPending = float64(t.Pending), float64(t.PopPending)
}

// cancelTimer cancels a pending timer by its offset message id through the
// broker API (the admin request CANCEL_TIMER_MESSAGE's call).
func (cb *consoleBackend) cancelTimer(ctx context.Context, c console.Credentials, offsetMsgID string) error {
	core, err := cb.core()
	if err != nil {
		return err
	}
	_, off, err := message.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		return fmt.Errorf("message id %q: %w", offsetMsgID, err)
	}
	_, err = await(ctx, func(done func(writer.Result, *broker.Error)) {
		core.CancelTimer(cb.caller(c), &broker.CancelTimerRequest{MsgID: offsetMsgID, CommitLogOffset: off}, done)
	})
	return err
}

// parseTimerCursor reads "ms-seq" ("" is the first page), as
// LIST_TIMER_MESSAGES does (remoting.ParseTimerCursor).
func parseTimerCursor(s string) (timerwheel.Cursor, error) {
	if s == "" {
		return timerwheel.FirstCursor, nil
	}
	ms, seq, err := remoting.ParseTimerCursor(s)
	if err != nil {
		return timerwheel.Cursor{}, err
	}
	return timerwheel.Cursor{Ms: ms, Seq: seq}, nil
}

func formatTimerCursor(c timerwheel.Cursor) string { return remoting.FormatTimerCursor(c.Ms, c.Seq) }
