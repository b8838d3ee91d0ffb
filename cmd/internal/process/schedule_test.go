package process_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/timer"
	wheelsched "github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// fire is one received fire of a recurring timer.
type fire struct {
	seq, fireMs, storedMs           int64
	msgID, origin, body, tags, keys string
}

// firesOf returns the received messages of the schedule origin, by
// sequence number (every fire once: a doubled seq fails the test).
func firesOf(t *testing.T, rec *processtest.Received, origin string) []fire {
	t.Helper()
	var out []fire
	seen := map[int64]bool{}
	for _, m := range rec.Snapshot() {
		if m.GetProperty(wheelsched.PropOrigin) != origin {
			continue
		}
		seq, err := strconv.ParseInt(m.GetProperty(wheelsched.PropSeq), 10, 64)
		if err != nil {
			t.Fatalf("fire %s without a sequence number: %v", m.MsgId, m.GetProperty(wheelsched.PropSeq))
		}
		if seen[seq] {
			t.Fatalf("fire %d of %s delivered twice", seq, origin)
		}
		seen[seq] = true
		fireMs, _ := strconv.ParseInt(m.GetProperty(wheelsched.PropFireMs), 10, 64)
		out = append(out, fire{seq: seq, fireMs: fireMs, storedMs: m.StoreTimestamp, msgID: m.MsgId, origin: origin,
			body: string(m.Body), tags: m.GetTags(), keys: m.GetKeys()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// hasFires reports whether origin's fires 1..n have all arrived.
func hasFires(origin string, n int) func([]*primitive.MessageExt) bool {
	return func(ms []*primitive.MessageExt) bool {
		got := map[string]bool{}
		for _, m := range ms {
			if m.GetProperty(wheelsched.PropOrigin) == origin {
				got[m.GetProperty(wheelsched.PropSeq)] = true
			}
		}
		for i := 1; i <= n; i++ {
			if !got[strconv.Itoa(i)] {
				return false
			}
		}
		return true
	}
}

// checkSeries checks fires 1..len(fs) of an @every schedule: each seq
// once with no gap, each a period after the one before, none stored
// before its fire time, each with its own message id.
func checkSeries(t *testing.T, fs []fire, period time.Duration) {
	t.Helper()
	ids := map[string]bool{}
	for i, f := range fs {
		if f.seq != int64(i+1) {
			t.Fatalf("fire %d missing (got seq %d at position %d)", i+1, f.seq, i)
		}
		if f.storedMs < f.fireMs {
			t.Fatalf("fire %d early: stored %d, due %d", f.seq, f.storedMs, f.fireMs)
		}
		if i > 0 && f.fireMs-fs[i-1].fireMs != period.Milliseconds() {
			t.Fatalf("fire %d due %d ms after fire %d, want %s", f.seq, f.fireMs-fs[i-1].fireMs, fs[i-1].seq, period)
		}
		if ids[f.msgID] || f.msgID == f.origin {
			t.Fatalf("fire %d reuses message id %s", f.seq, f.msgID)
		}
		ids[f.msgID] = true
	}
}

// TestRecurringTimer sends an @every 1s and a 6-field cron schedule with
// the official Go client: the fires arrive in sequence, with the original
// body, tag, keys and user properties, none early; cancelling the schedule
// by the offset message id its send returned stops it: nothing is due
// more than one period after the cancel was answered.
func TestRecurringTimer(t *testing.T) {
	t.Parallel() // waits more than it computes
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("recur")
	processtest.CreateTopic(t, n, topic, 1)
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	send := func(body, sched string) *primitive.SendResult {
		t.Helper()
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag("tick").WithKeys([]string{"job-" + body})
		m.WithProperty("app", "reports")
		m.WithProperty(wheelsched.Prop, sched)
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("send %q: %v", sched, err)
		}
		return res
	}
	sentAt := time.Now().UnixMilli()
	every := send("every", "@every 1s")
	cron := send("cron", "CRON_TZ=Europe/Berlin * * * * * *")
	if !rec.WaitUntil(hasFires(every.MsgID, 4), 20*time.Second) || !rec.WaitUntil(hasFires(cron.MsgID, 2), 20*time.Second) {
		t.Fatalf("fires missing: %d received", rec.Len())
	}
	fs := firesOf(t, rec, every.MsgID)
	checkSeries(t, fs, time.Second)
	if fs[0].fireMs < sentAt+1000 {
		t.Fatalf("first fire due %d, less than 1 s after the send at %d", fs[0].fireMs, sentAt)
	}
	for _, f := range fs {
		if f.body != "every" || f.tags != "tick" || f.keys != "job-every" {
			t.Fatalf("fire %d: body %q tag %q keys %q", f.seq, f.body, f.tags, f.keys)
		}
	}
	for _, m := range rec.Snapshot() {
		if m.GetProperty("app") != "reports" || m.GetProperty(wheelsched.PropOf) == "" {
			t.Fatalf("fire %s lost its properties: %v", m.MsgId, m.GetProperties())
		}
		if m.GetProperty(wheelsched.Prop) != "" {
			t.Fatalf("fire %s carries %s (sent again it would be a new schedule): %v", m.MsgId, wheelsched.Prop, m.GetProperties())
		}
	}
	for _, f := range firesOf(t, rec, cron.MsgID) {
		if f.fireMs%1000 != 0 || f.storedMs < f.fireMs {
			t.Fatalf("cron fire %d due %d stored %d", f.seq, f.fireMs, f.storedMs)
		}
	}

	for _, res := range []*primitive.SendResult{every, cron} {
		resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.CancelTimerMessage,
			map[string]string{"msgId": res.OffsetMsgID}, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("cancel schedule %s: code %d %s", res.MsgID, resp.Code, resp.Remark)
		}
	}
	answered := time.Now().UnixMilli()
	// Nothing due after answered + one period may arrive: watch for two
	// periods past that bound (a fire that must not happen).
	time.Sleep(3 * time.Second)
	for _, origin := range []string{every.MsgID, cron.MsgID} {
		for _, f := range firesOf(t, rec, origin) {
			if f.fireMs > answered+1000 {
				t.Fatalf("fire %d of %s due %d, after the cancel answered at %d + 1 period", f.seq, origin, f.fireMs, answered)
			}
		}
	}
}

// TestRecurringTimerRefusals: a schedule that does not parse, names an
// unknown zone, fires more often than the minimum (1 s) or never, or
// comes with a delay is refused with MESSAGE_ILLEGAL (13) and a remark
// saying why, and nothing is stored.
func TestRecurringTimerRefusals(t *testing.T) {
	n := processtest.Start(t, processtest.Options{})
	topic := processtest.Unique("recurbad")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	cl, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	timerRecords := func() int {
		recs, err := processtest.ReadQueue(ctx, cl, timer.Topic, 0)
		if err != nil && !strings.Contains(err.Error(), "code") {
			t.Fatal(err)
		}
		return len(recs)
	}
	before := timerRecords()
	cases := map[string]struct{ sched, remark string }{
		"garbage":       {"every five seconds", "expected 5 to 6 fields"},
		"bad duration":  {"@every 5 sec", "@every needs a duration"},
		"unknown zone":  {"CRON_TZ=Europe/Atlantis 0 9 * * *", "unknown time zone"},
		"too often":     {"@every 500ms", "below the minimum 1s"},
		"zero interval": {"@every 0s", "below the minimum"},
		"never":         {"0 0 30 2 *", "never fires"},
		"with delay":    {"@every 5s", "cannot be combined"},
	}
	for name, c := range cases {
		m := primitive.NewMessage(topic, []byte(name))
		m.WithProperty(wheelsched.Prop, c.sched)
		if name == "with delay" {
			m.WithDelayTimestamp(time.Now().Add(time.Minute))
		}
		_, err := p.SendSync(ctx, m)
		if err == nil || !strings.Contains(err.Error(), "CODE: 13") || !strings.Contains(err.Error(), c.remark) {
			t.Errorf("%s: want MESSAGE_ILLEGAL (13) saying %q, got %v", name, c.remark, err)
		}
	}
	if after := timerRecords(); after != before {
		t.Fatalf("refused schedules stored %d timer records", after-before)
	}
	recs, err := processtest.ReadQueue(ctx, cl, topic, 0)
	if err != nil && !strings.Contains(err.Error(), "code") {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Fatalf("refused schedules stored %d messages in %s", len(recs), topic)
	}
}

// TestRecurringTimerMinInterval: the minimum interval is the broker's
// setting (--timer-schedule-min-interval): at 5 s, @every 2s is refused and
// @every 5s taken.
func TestRecurringTimerMinInterval(t *testing.T) {
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) { c.ScheduleMinInterval = 5 * time.Second }})
	topic := processtest.Unique("recurmin")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	send := func(sched string) error {
		m := primitive.NewMessage(topic, []byte(sched))
		m.WithProperty(wheelsched.Prop, sched)
		_, err := p.SendSync(context.Background(), m)
		return err
	}
	if err := send("@every 2s"); err == nil || !strings.Contains(err.Error(), "below the minimum 5s") {
		t.Fatalf("@every 2s under a 5 s minimum: %v", err)
	}
	if err := send("@every 5s"); err != nil {
		t.Fatalf("@every 5s: %v", err)
	}
}
