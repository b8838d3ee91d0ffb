package router

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func TestDelayLevel(t *testing.T) {
	for _, c := range []struct {
		level int
		want  time.Duration
	}{{-1, 0}, {0, 0}, {1, time.Second}, {3, 10 * time.Second}, {5, time.Minute}, {18, 2 * time.Hour}, {99, 2 * time.Hour}} {
		if got := timer.DelayLevel(c.level); got != c.want {
			t.Errorf("DelayLevel(%d) = %s, want %s", c.level, got, c.want)
		}
	}
}

// timerPlan is the broker API's timer plan in remoting's codes.
type timerPlan struct {
	timer  bool
	dueMs  int64
	code   int32
	remark string
}

// planTimer applies the broker's timer rules to props (modified in place).
func (r *Router) planTimer(props map[string]string, nowMs int64) timerPlan {
	p, err := r.core.PlanTimer(props, nowMs)
	if ref := refusalOf(err); ref != nil {
		return timerPlan{code: ref.Code, remark: ref.Remark}
	}
	return timerPlan{timer: p.Timer, dueMs: p.DueMs}
}

func TestPlanTimer(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	r := &Router{cfg: &cfg, core: broker.Detached(&cfg, netip.AddrPort{})}
	r.cfg.MaxTimerDelay = 24 * time.Hour
	const now = int64(1_700_000_000_000)
	day := (24 * time.Hour).Milliseconds()
	for _, c := range []struct {
		name    string
		props   map[string]string
		timer   bool
		due     int64
		code    int32
		removed []string // properties that must be gone afterwards
	}{
		{name: "plain", props: map[string]string{}},
		{name: "deliver ms", props: map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(now+1234, 10)}, timer: true, due: now + 1234},
		{name: "delay ms", props: map[string]string{"TIMER_DELAY_MS": "250"}, timer: true, due: now + 250},
		{name: "delay sec", props: map[string]string{"TIMER_DELAY_SEC": "3"}, timer: true, due: now + 3000},
		{name: "sec wins over ms and deliver", props: map[string]string{"TIMER_DELAY_SEC": "2", "TIMER_DELAY_MS": "5", "TIMER_DELIVER_MS": "1"},
			timer: true, due: now + 2000},
		{name: "delay level wins", props: map[string]string{"DELAY": "2", "TIMER_DELAY_MS": "5"}, timer: true, due: now + 5000,
			removed: []string{"TIMER_DELAY_MS"}},
		{name: "level zero is plain", props: map[string]string{"DELAY": "0"}},
		{name: "level -1 is plain", props: map[string]string{"DELAY": "-1"}},
		{name: "already due", props: map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(now-1, 10)}},
		{name: "due exactly now", props: map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(now, 10)}},
		{name: "max delay ok", props: map[string]string{"TIMER_DELAY_MS": strconv.FormatInt(day, 10)}, timer: true, due: now + day},
		{name: "beyond max", props: map[string]string{"TIMER_DELAY_MS": strconv.FormatInt(day+1, 10)}, code: remoting.MessageIllegal},
		{name: "beyond max abs", props: map[string]string{"TIMER_DELIVER_MS": strconv.FormatInt(now+day+1, 10)}, code: remoting.MessageIllegal},
		{name: "huge sec", props: map[string]string{"TIMER_DELAY_SEC": "9223372036854775807"}, code: remoting.MessageIllegal},
		{name: "negative", props: map[string]string{"TIMER_DELAY_MS": "-1"}, code: remoting.MessageIllegal},
		{name: "garbage", props: map[string]string{"TIMER_DELIVER_MS": "soon"}, code: remoting.MessageIllegal},
		{name: "garbage level", props: map[string]string{"DELAY": "x"}, code: remoting.MessageIllegal},
		{name: "cancel in the past", props: map[string]string{"TIMER_DEL_UNIQKEY": "T+K", "TIMER_DELIVER_MS": "1"}, code: remoting.MessageIllegal},
		{name: "cancel without time", props: map[string]string{"TIMER_DEL_UNIQKEY": "T+K"}, code: remoting.MessageIllegal},
		{name: "cancel", props: map[string]string{"TIMER_DEL_UNIQKEY": "T+K", "TIMER_DELIVER_MS": strconv.FormatInt(now+10, 10)},
			timer: true, due: now + 10},
		{name: "already transformed", props: map[string]string{"TIMER_OUT_MS": "5", "TIMER_DELAY_MS": "100"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := r.planTimer(c.props, now)
			if plan.code != c.code {
				t.Fatalf("code %d (%s), want %d", plan.code, plan.remark, c.code)
			}
			if c.code != 0 && plan.remark == "" {
				t.Fatal("a refusal needs a remark")
			}
			if plan.timer != c.timer || (c.timer && plan.dueMs != c.due) {
				t.Fatalf("timer %v due %d, want %v %d", plan.timer, plan.dueMs, c.timer, c.due)
			}
			for _, k := range c.removed {
				if _, ok := c.props[k]; ok {
					t.Fatalf("%s still present", k)
				}
			}
		})
	}
}

func TestPlanTimerDisabled(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	r := &Router{cfg: &cfg, core: broker.Detached(&cfg, netip.AddrPort{})}
	r.cfg.TimerEnabled = false
	plan := r.planTimer(map[string]string{"TIMER_DELAY_MS": "100"}, 1000)
	if plan.code != remoting.SystemError {
		t.Fatalf("code %d, want SYSTEM_ERROR when timers are disabled", plan.code)
	}
}

func TestToTimerTopic(t *testing.T) {
	props := map[string]string{"TAGS": "A"}
	topic, q := timer.ToTimerTopic(props, 42, "orders", 3)
	if topic != "rmq_sys_wheel_timer" || q != 0 {
		t.Fatalf("got %s/%d", topic, q)
	}
	if props[message.PropTimerOutMS] != "42" || props[message.PropRealTopic] != "orders" || props[message.PropRealQueueID] != "3" ||
		props["TAGS"] != "A" {
		t.Fatalf("properties %v", props)
	}
}

func TestHasTimerProps(t *testing.T) {
	for props, want := range map[string]bool{
		"":                    false,
		"DELAY=0":             false,
		"DELAY=-1":            false,
		"DELAY=3":             true,
		"TIMER_DELAY_MS=1":    true,
		"TIMER_DELIVER_MS=1":  true,
		"TIMER_DEL_UNIQKEY=x": true,
		"KEYS=a":              false,
	} {
		m := map[string]string{}
		if props != "" {
			k, v, _ := cut(props)
			m[k] = v
		}
		if got := timer.HasTimerProps(m); got != want {
			t.Errorf("hasTimerProps(%q) = %v, want %v", props, got, want)
		}
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
