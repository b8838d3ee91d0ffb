package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/storage/message"
)

// formatMessage renders the n-th consumed message, which arrived at
// arrival, for a person: where it is, its ids, its times, and for a timer
// message its due time and how late it arrived.
func formatMessage(n int, m *primitive.MessageExt, arrival time.Time, preview int) string {
	var b strings.Builder
	queue := "?"
	if m.Queue != nil {
		queue = fmt.Sprintf("%s:%d", m.Queue.BrokerName, m.Queue.QueueId)
	}
	fmt.Fprintf(&b, "#%d  %s  queue %s  offset %d  msgId %s\n", n, m.Topic, queue, m.QueueOffset, m.MsgId)
	var attrs []string
	if k := m.GetKeys(); k != "" {
		attrs = append(attrs, "keys "+k)
	}
	if t := m.GetTags(); t != "" {
		attrs = append(attrs, "tags "+t)
	}
	born, stored := time.UnixMilli(m.BornTimestamp), time.UnixMilli(m.StoreTimestamp)
	attrs = append(attrs, "born "+born.UTC().Format(timeLayout),
		fmt.Sprintf("stored %s", signed(stored.Sub(born))))
	if m.ReconsumeTimes > 0 {
		attrs = append(attrs, fmt.Sprintf("redelivery %d", m.ReconsumeTimes))
	}
	fmt.Fprintf(&b, "    %s\n", strings.Join(attrs, "  "))
	if due, ok := timerDue(m); ok {
		late := arrival.Sub(due)
		verdict := "after due"
		if late < 0 {
			verdict = "EARLY"
		}
		fmt.Fprintf(&b, "    timer  due %s  written back %s  arrived %s %s\n",
			due.UTC().Format(timeLayout), signed(stored.Sub(due)), signed(late).abs(), verdict)
	}
	fmt.Fprintf(&b, "    body   %s\n", bodyPreview(m.Body, preview))
	return b.String()
}

// timerDue returns a timer message's due time (TIMER_DELIVER_MS as sent,
// else TIMER_OUT_MS as the broker planned it).
func timerDue(m *primitive.MessageExt) (time.Time, bool) {
	for _, k := range []string{message.PropTimerDeliverMS, message.PropTimerOutMS} {
		if v := m.GetProperty(k); v != "" {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
				return time.UnixMilli(ms), true
			}
		}
	}
	return time.Time{}, false
}

// signedDuration prints with an explicit sign, to the 0.1 ms.
type signedDuration string

// signed formats d as +1.2ms / -3s.
func signed(d time.Duration) signedDuration {
	s := d.Round(100 * time.Microsecond).String()
	if d >= 0 {
		s = "+" + s
	}
	return signedDuration(s)
}

// abs drops the sign.
func (s signedDuration) abs() string { return strings.TrimLeft(string(s), "+-") }

// bodyPreview shows the first max bytes of a body: quoted text, or hex.
func bodyPreview(body []byte, max int) string {
	head := body
	if len(head) > max {
		head = head[:max]
	}
	more := ""
	if len(head) < len(body) {
		more = " ..."
	}
	size := fmt.Sprintf("%d B", len(body))
	if len(body) == 0 {
		return size
	}
	if utf8.Valid(head) && printable(head) {
		return fmt.Sprintf("%s  %q%s", size, head, more)
	}
	return fmt.Sprintf("%s  hex %x%s", size, head, more)
}

// printable reports whether b is text (letters, marks, spaces, newlines).
func printable(b []byte) bool {
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}
