package main

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/storage/message"
)

func rec(topic string, props map[string]string, off int64) located {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	return newLocated(message.Record{Topic: topic, Properties: message.EncodeProperties(props), PhysicalOffset: off,
		StoreHost: host, BornHost: host, StoreTimestamp: 1000}, "127.0.0.1:10911", "broker-a")
}

func TestAssessTimerState(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	due := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	waiting := func(at string) located {
		return rec(timer.Topic, map[string]string{message.PropUniqKey: "U", message.PropRealTopic: "T",
			message.PropRealQueueID: "2", message.PropTimerOutMS: at}, 10)
	}
	copyOf := func(at string) located {
		return rec("T", map[string]string{message.PropUniqKey: "U", message.PropTimerOutMS: at,
			message.PropTimerDequeueMS: at}, 20)
	}
	cancel := func(key string) located {
		return rec(timer.Topic, map[string]string{message.PropUniqKey: "U", message.PropTimerDelUniqKey: key,
			message.PropTimerOutMS: due(time.Hour)}, 30)
	}
	cases := []struct {
		name    string
		m       located
		related []located
		state   string
		detail  string
	}{
		{"pending", waiting(due(time.Minute)), nil, statePending, "due in 1m0s"},
		{"pending, unrelated records", waiting(due(time.Minute)), []located{copyOf(due(-time.Hour)), cancel("T+V"), cancel("X+U")},
			statePending, "in the timer wheel"},
		{"delivered", waiting(due(-time.Second)), []located{waiting(due(-time.Second)), copyOf(due(-time.Second))},
			stateDelivered, "written back to T queue 0 offset 0"},
		{"delivered, cancel too late", waiting(due(-time.Second)), []located{cancel("T+U"), copyOf(due(-time.Second))},
			stateDelivered, "too late"},
		{"the written-back copy itself", copyOf(due(-time.Second)), nil, stateDelivered, "written back to T"},
		{"cancelled, ahead", waiting(due(time.Hour)), []located{cancel("T+U")}, stateCancelled, "it will not be delivered"},
		{"cancelled, past", waiting(due(-time.Hour)), []located{cancel("T+U")}, stateCancelled, "cancel stored at"},
		{"due, nothing found", waiting(due(-time.Minute)), nil, stateUnknown, "no delivered copy in the index"},
		{"no due time", rec(timer.Topic, map[string]string{message.PropUniqKey: "U"}, 1), nil, stateUnknown, "no due time"},
	}
	for _, c := range cases {
		st := assess(c.m, c.related, now)
		if st.State != c.state || !strings.Contains(st.Detail, c.detail) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, st.State, st.Detail, c.state, c.detail)
		}
	}
	if k := cancel("T+U").kind(); k != kindCancel {
		t.Errorf("cancel kind %v", k)
	}
	if w := waiting("1"); w.kind() != kindTimer || w.topic() != "T" {
		t.Errorf("waiting copy: kind %v topic %s", w.kind(), w.topic())
	}
}
