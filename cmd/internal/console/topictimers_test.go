package console

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The fake's pending timers: topic-00001 has three, listed two a page.
func (f *fake) TopicTimers(_ context.Context, _ Credentials, topic, cursor string, limit int) (TimerPage, error) {
	if topic != "topic-00001" {
		return TimerPage{}, nil
	}
	due := time.Now().Add(3*time.Hour + 2*time.Minute + 30*time.Second)
	all := []PendingTimer{
		{Due: due, UniqKey: "U1", OffsetMsgID: "OFF1", Keys: []string{"k1", "k2"}, Tags: "TagA", BodySize: 12, Queue: "0"},
		{Due: due.Add(time.Minute), UniqKey: "U2", OffsetMsgID: "OFF2", BodySize: 3, Queue: "1", Schedule: "CRON_TZ=Europe/Berlin 0 9 * * *", Seq: 12},
		{Due: due.Add(2 * time.Minute), UniqKey: "U3", OffsetMsgID: "OFF3", BodySize: 3, Queue: "1"},
	}
	from := map[string]int{"": 0, "c2": 2}[cursor]
	to := min(from+min(limit, 2), len(all))
	p := TimerPage{Timers: all[from:to], More: to < len(all)}
	if p.More {
		p.Next = "c2"
	}
	return p, nil
}

func (f *fake) TimerCounts(context.Context, Credentials) (TimerCounts, error) {
	return TimerCounts{Topics: map[string]int64{"topic-00001": 3}, PopDeadlines: 5, Complete: true}, nil
}

func TestFmtUntil(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for d, want := range map[time.Duration]string{
		-time.Second: "due", 0: "due", 300 * time.Millisecond: "in <1s", 45 * time.Second: "in 45s",
		3*time.Hour + 2*time.Minute + 59*time.Second: "in 3h 2m", 3 * time.Hour: "in 3h",
		26*time.Hour + 5*time.Minute: "in 1d 2h", 90 * time.Second: "in 1m 30s", 48*time.Hour + 10*time.Second: "in 2d",
	} {
		if got := fmtUntil(now.Add(d), now); got != want {
			t.Errorf("fmtUntil(+%v) = %q, want %q", d, got, want)
		}
	}
}

// TestTopicTimers: the topic page lists the topic's timers with a cancel
// button each (a recurring timer with its schedule and next fire number)
// and a next link, the topics list shows the count, and a
// cancel posts the timer's offset message id back to the topic page.
func TestTopicTimers(t *testing.T) {
	f := newFake(false, 3)
	srv, cl := serve(t, f)
	_, body, _ := get(t, cl, srv.URL+"/topic?name=topic-00001")
	for _, want := range []string{`id="timer-count">3 pending timer messages`, "in 3h 2m", "U1", "k1 k2", "TagA", `value="OFF1"`,
		`value="OFF2"`, `id="timers-next"`, "timers=c2", `<span class="schedule" title="recurring timer: next fire 12">&#8635; CRON_TZ=Europe/Berlin 0 9 * * * (fire 12)</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("topic page lacks %q", want)
		}
	}
	if strings.Contains(body, "U3") || strings.Count(body, `class="cancel-timer"`) != 2 {
		t.Errorf("first page should hold U1 and U2 with a cancel button each")
	}
	_, body2, _ := get(t, cl, srv.URL+"/topic?name=topic-00001&timers=c2")
	if !strings.Contains(body2, "U3") || strings.Contains(body2, "U1") || strings.Contains(body2, `id="timers-next"`) {
		t.Errorf("second page should hold U3 alone")
	}
	_, list, _ := get(t, cl, srv.URL+"/topics")
	if !strings.Contains(list, `<td class="n timers">3</td>`) {
		t.Errorf("topics list lacks the pending timer count")
	}
	code, h := post(t, cl, srv.URL+"/timers/cancel", map[string][]string{"csrf": {csrfOf(t, body)}, "offsetMsgId": {"OFF2"},
		"topic": {"topic-00001"}, "back": {"/topic?name=topic-00001"}})
	if code != 303 || !strings.HasPrefix(h.Get("Location"), "/topic?name=topic-00001") {
		t.Fatalf("cancel: %d to %q", code, h.Get("Location"))
	}
	if ch := f.changed(); len(ch) != 1 || ch[0] != "cancel OFF2" {
		t.Fatalf("changes %v", ch)
	}
}
