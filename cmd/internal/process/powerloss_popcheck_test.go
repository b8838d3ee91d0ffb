package process_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/writer"
)

// TestPowerLossPOPChecker feeds the power-loss test's POP checker histories
// it must reject and histories it must accept.
func TestPowerLossPOPChecker(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	d := func(life int, popMs, inv int64, ackMs int64) *popDelivery {
		x := &popDelivery{body: "o-1-1", life: life, popTime: t0.UnixMilli() + popMs, invisible: inv, answered: at(popMs + 1)}
		if ackMs > 0 {
			x.ackAt = at(ackMs)
		}
		return x
	}
	ops := []plOp{{id: "o-1-1", kind: opPop, loop: 1}}
	cases := []struct {
		name    string
		mode    writer.FlushMode
		crashAt map[int]time.Time
		synced  time.Time // life 1's last fsync (async flush)
		ds      []*popDelivery
		want    string // a problem's words ("": none)
	}{
		{"redelivered after its invisible time", writer.FlushSync, nil, time.Time{},
			[]*popDelivery{d(1, 0, 1000, 0), d(1, 1000, 1000, 0)}, ""},
		{"redelivered early, same life", writer.FlushAsync, nil, time.Time{},
			[]*popDelivery{d(1, 0, 1000, 0), d(1, 999, 1000, 0)}, "1 ms early"},
		{"redelivered early after a crash, sync flush", writer.FlushSync, map[int]time.Time{1: at(500)}, time.Time{},
			[]*popDelivery{d(1, 0, 1000, 0), d(2, 700, 1000, 0)}, "300 ms early"},
		{"redelivered early after a crash, async flush: the pop's journal entry may be lost", writer.FlushAsync,
			map[int]time.Time{1: at(500)}, time.Time{}, []*popDelivery{d(1, 0, 1000, 0), d(2, 700, 1000, 0)}, ""},
		{"popped after the crash instant (on the old disk): indeterminate", writer.FlushSync,
			map[int]time.Time{1: at(500)}, time.Time{}, []*popDelivery{d(1, 600, 1000, 0), d(2, 700, 1000, 0)}, ""},
		{"acked and delivered again, same life", writer.FlushAsync, nil, time.Time{},
			[]*popDelivery{d(1, 0, 1000, 10), d(1, 1000, 1000, 0)}, "acked at"},
		{"acked, then delivered again after a crash, sync flush", writer.FlushSync, map[int]time.Time{1: at(500)}, time.Time{},
			[]*popDelivery{d(1, 0, 1000, 10), d(2, 1000, 1000, 0)}, "acked at"},
		{"acked, then delivered again after a crash, async flush: the ack may be lost", writer.FlushAsync,
			map[int]time.Time{1: at(500)}, time.Time{}, []*popDelivery{d(1, 0, 1000, 10), d(2, 1000, 1000, 0)}, ""},
		{"acked after its invisible time: may come back", writer.FlushSync, nil, time.Time{},
			[]*popDelivery{d(1, 0, 1000, 1001), d(1, 1002, 1000, 0)}, ""},
		{"acked before the last fsync, then delivered again after a crash, async flush", writer.FlushAsync,
			map[int]time.Time{1: at(500)}, at(400), []*popDelivery{d(1, 0, 1000, 10), d(2, 1000, 1000, 0)}, "acked at"},
		{"redelivered early after a crash, popped before the last fsync, async flush", writer.FlushAsync,
			map[int]time.Time{1: at(500)}, at(400), []*popDelivery{d(1, 0, 1000, 0), d(2, 700, 1000, 0)}, "300 ms early"},
		{"delivered in a later life that does not hold it", writer.FlushSync, map[int]time.Time{1: at(500)}, time.Time{},
			[]*popDelivery{d(2, 1000, 1000, 0)}, "does not hold it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &popHistory{mode: c.mode, ds: c.ds, crashAt: c.crashAt, held: map[int]map[string]bool{},
				syncedAt: map[int]time.Time{1: c.synced}}
			if c.want != "does not hold it" {
				h.held[2] = map[string]bool{"o-1-1": true}
			}
			var v verdict
			h.check(&v, ops)
			got := v.String()
			switch {
			case c.want == "" && got != "":
				t.Fatalf("rejected: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Fatalf("want a problem with %q, got %q", c.want, got)
			}
		})
	}
}
