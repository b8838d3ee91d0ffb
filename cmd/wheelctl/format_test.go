package main

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func TestFormatMessage(t *testing.T) {
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	msg := func(body []byte, props map[string]string) *primitive.MessageExt {
		m := &primitive.MessageExt{MsgId: "ID1", QueueOffset: 17, BornTimestamp: base.UnixMilli() - 90_000,
			StoreTimestamp: base.UnixMilli() + 2}
		m.Topic, m.Body = "orders", body
		m.Queue = &primitive.MessageQueue{Topic: "orders", BrokerName: "broker-a", QueueId: 2}
		m.WithProperties(props)
		return m
	}
	due := map[string]string{"TIMER_DELIVER_MS": "1796115600000", "TAGS": "paid", "KEYS": "k1 k2"}
	tests := []struct {
		name    string
		m       *primitive.MessageExt
		arrival time.Time
		want    []string
		not     []string
	}{
		{"timer on time", msg([]byte("hello"), due), base.Add(3 * time.Millisecond), []string{
			"#1  orders  queue broker-a:2  offset 17  msgId ID1",
			"keys k1 k2  tags paid  born 2026-12-01 08:58:30.000 UTC  stored +1m30.002s",
			"timer  due 2026-12-01 09:00:00.000 UTC  written back +2ms  arrived 3ms after due",
			`body   5 B  "hello"`}, []string{"EARLY"}},
		{"timer early", msg([]byte("x"), due), base.Add(-time.Second), []string{"arrived 1s EARLY"}, nil},
		{"plain binary", msg([]byte{0, 1, 2, 0xff}, nil), base, []string{"body   4 B  hex 000102ff"}, []string{"timer"}},
		{"long body cut", msg([]byte(strings.Repeat("a", 100)), nil), base, []string{`100 B  "` + strings.Repeat("a", 10) + `" ...`}, nil},
		{"empty body", msg(nil, map[string]string{"TIMER_OUT_MS": "1796115600000"}), base, []string{"body   0 B", "timer  due 2026-12-01 09:00:00.000 UTC"}, nil},
	}
	for _, tt := range tests {
		got := formatMessage(1, tt.m, tt.arrival, 10)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: lacks %q:\n%s", tt.name, w, got)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: has %q:\n%s", tt.name, w, got)
			}
		}
	}
}

func TestSendDueTime(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		o    sendOptions
		want time.Time
		bad  bool
	}{
		{sendOptions{}, time.Time{}, false},
		{sendOptions{delay: 90 * time.Second}, now.Add(90 * time.Second), false},
		{sendOptions{at: "2026-12-01T09:00:00Z"}, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), false},
		{sendOptions{at: "2026-12-01T10:00:00.250+01:00"}, time.Date(2026, 12, 1, 9, 0, 0, 250e6, time.UTC), false},
		{sendOptions{delay: time.Second, at: "2026-12-01T09:00:00Z"}, time.Time{}, true},
		{sendOptions{delay: -time.Second}, time.Time{}, true},
		{sendOptions{at: "next week"}, time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := tt.o.dueTime(now)
		if (err != nil) != tt.bad || !got.Equal(tt.want) {
			t.Errorf("%+v: got %v %v, want %v bad=%v", tt.o, got, err, tt.want, tt.bad)
		}
	}
}
