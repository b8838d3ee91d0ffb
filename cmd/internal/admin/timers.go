package admin

// wheelmq's LIST_TIMER_MESSAGES (3502): one page of a topic's pending
// timer messages (docs/compatibility.md has the layout).

import (
	"context"
	"strconv"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// ListTimers asks broker for the page of topic's pending timers after the
// cursor after ("" for the first page), at most limit (0: the broker's
// default of 50).
func (s *Session) ListTimers(ctx context.Context, broker, topic, after string, limit int) (remoting.TimerListBody, error) {
	fields := map[string]string{"topic": topic}
	if after != "" {
		fields["after"] = after
	}
	if limit > 0 {
		fields["limit"] = strconv.Itoa(limit)
	}
	var page remoting.TimerListBody
	resp, err := s.Call(ctx, broker, remoting.NewRequest(remoting.ListTimerMessages, fields, nil))
	if err != nil {
		return page, err
	}
	err = decode("LIST_TIMER_MESSAGES", resp.Body, &page)
	return page, err
}
