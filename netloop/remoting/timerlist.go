package remoting

// The body of wheelmq's LIST_TIMER_MESSAGES (3502) answer and its page
// cursor, shared by the broker's router and wheelctl timers. Layout in
// docs/compatibility.md, "LIST_TIMER_MESSAGES".

import (
	"fmt"
	"strconv"
	"strings"
)

// TimerListBody is one page of a topic's pending timer messages, in due
// order, as JSON.
type TimerListBody struct {
	// Timers are the page's pending timers.
	Timers []TimerListEntry `json:"timers"`
	// Next is the cursor of the next page ("ms-seq"), "" when More is false.
	Next string `json:"next,omitempty"`
	// More reports whether timers may follow Next.
	More bool `json:"more"`
	// Scanned is the number of pending timers (of every topic) examined.
	Scanned int `json:"scanned"`
}

// TimerListEntry is one pending timer message.
type TimerListEntry struct {
	// DueMs is the delivery time (epoch ms; a recurring timer's next
	// fire), AddedMs when the wheel took it.
	DueMs   int64 `json:"dueMs"`
	AddedMs int64 `json:"addedMs"`
	// MsgID is the message id the producer got (UNIQ_KEY); OffsetMsgID the
	// stored timer message's id, which CANCEL_TIMER_MESSAGE takes.
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	// Keys and Tags are the message's KEYS and TAGS; BodySize its body's
	// size in bytes; QueueID the queue it will be delivered to.
	Keys     []string `json:"keys,omitempty"`
	Tags     string   `json:"tags,omitempty"`
	BodySize int      `json:"bodySize"`
	QueueID  string   `json:"queueId,omitempty"`
	// Schedule is a recurring timer's WHEEL_SCHEDULE and Seq the number of
	// its pending fire (WHEEL_SCHEDULE_SEQ); "" and 0 for a one-off timer.
	Schedule string `json:"schedule,omitempty"`
	Seq      int64  `json:"seq,omitempty"`
}

// FormatTimerCursor writes a timer-wheel position as "ms-seq".
func FormatTimerCursor(ms int64, seq uint64) string {
	return strconv.FormatInt(ms, 10) + "-" + strconv.FormatUint(seq, 10)
}

// ParseTimerCursor reads a cursor FormatTimerCursor wrote.
func ParseTimerCursor(s string) (ms int64, seq uint64, err error) {
	a, b, ok := strings.Cut(s, "-")
	if ok && a == "" { // a negative ms: "-5-3"
		var rest string
		rest, b, ok = strings.Cut(b, "-")
		a = "-" + rest
	}
	m, err1 := strconv.ParseInt(a, 10, 64)
	q, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("timer cursor %q: want ms-seq (the next of the previous page)", s)
	}
	return m, q, nil
}
