package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/actors/timer/schedule/testzone"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestDSTRecurringTimer: cron schedules fire on time across a SIGKILL and
// two daylight-saving changes of a made-up zone, Test/DST, that the
// broker process reads from a TZif file in its ZONEINFO directory
// (docs/timer.md, "Daylight saving in a test"). Seconds after the send
// the zone springs forward 3 s (+3600 -> +3603), and 5 s later falls back
// 9 s (-> +3594). Two schedules in it, every second and every even
// second, and an @every 1s witness are sent; the broker is killed between
// the two changes and restarted on the same data; then both cron
// schedules are cancelled. Their stored fires are exactly the oracle's
// (testzone.Fires: skipped wall times not fired, the 9 repeated seconds
// not fired again; every second across a 9 s fall back also shows that
// the series goes on), none early, none doubled, none due before the
// cancel was sent missing, and
// none due more than a period after the cancel answered while the
// witness fires twice more.
func TestDSTRecurringTimer(t *testing.T) {
	t.Parallel() // waits more than it computes
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	began := time.Now()
	bin := buildBinary(t)
	built := time.Since(began)
	dir, zones := t.TempDir(), t.TempDir()
	env := []string{"ZONEINFO=" + zones}
	start := func() *proc {
		p, err := tryStartProcEnv(t, bin, dir, env)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := start()
	topic := processtest.Unique("dst")
	resp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	processtest.WaitRoute(t, p.namesrv, topic)
	prod := processtest.Producer(t, p.namesrv)

	// The zone's changes are relative to now: the process reads the file
	// when it parses a schedule (at the send, after a restart).
	t0 := time.Now().Truncate(time.Second).Add(time.Second)
	t.Logf("binary in %v, broker up and topic routed in %v more", built.Round(time.Millisecond), (time.Since(began) - built).Round(time.Millisecond))
	spring, fall := t0.Add(3*time.Second), t0.Add(8*time.Second)
	zone := testzone.Zone{
		Initial: testzone.Offset{Name: "TST", Seconds: 3600},
		Changes: []testzone.Change{
			{At: spring, To: testzone.Offset{Name: "TDT", Seconds: 3603, DST: true}},
			{At: fall, To: testzone.Offset{Name: "TST", Seconds: 3594}},
		},
	}
	if err := testzone.Write(zones, "Test/DST", zone); err != nil {
		t.Fatal(err)
	}
	data, err := testzone.TZif(zone)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocationFromTZData("Test/DST", data)
	if err != nil {
		t.Fatal(err)
	}
	type sched struct {
		text          string
		match         func(wall time.Time) bool
		id, offsetID  string
		before, after time.Time // around the send
	}
	scheds := []*sched{
		{text: "CRON_TZ=Test/DST * * * * * *", match: func(time.Time) bool { return true }},
		{text: "CRON_TZ=Test/DST */2 * * * * *", match: func(w time.Time) bool { return w.Second()%2 == 0 }},
		{text: "@every 1s"}, // the witness, never cancelled
	}
	for i, s := range scheds {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("dst-%d", i)))
		m.WithProperty(schedule.Prop, s.text)
		s.before = time.Now()
		res, err := prod.SendSync(context.Background(), m)
		if err != nil {
			t.Fatalf("send %q: %v", s.text, err)
		}
		s.after = time.Now()
		s.id, s.offsetID = res.MsgID, res.OffsetMsgID
	}
	_ = prod.Shutdown()
	every, witness := scheds[0], scheds[2]

	// waitFire waits until schedule s has a stored fire due at or after
	// atMs, and returns all stored fires.
	waitFire := func(addr string, s *sched, at time.Time) map[string]map[int64]*storedFire {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			got := storedFires(t, addr, topic)
			for _, f := range got[s.id] {
				if f.fireMs >= at.UnixMilli() {
					return got
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q: no fire due at %s stored by %s", s.text, at.Format(time.StampMilli), time.Now().Format(time.StampMilli))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFire(p.broker, every, spring.Add(time.Second))
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = p.wait(t, 10*time.Second)
	p = start()
	t.Logf("killed %v after the spring forward, %v before the fall back; up again %v after the kill",
		killed.Sub(spring).Round(time.Millisecond), fall.Sub(killed).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	// 9 s of repeated wall times after the fall back, then two more.
	reached := fall.Add(11 * time.Second)
	waitFire(p.broker, every, reached)

	cancelSent := time.Now()
	for _, s := range scheds[:2] {
		resp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.CancelTimerMessage,
			map[string]string{"msgId": s.offsetID}, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("cancel %q: code %d %s", s.text, resp.Code, resp.Remark)
		}
	}
	answered := time.Now()
	// Two witness fires due after the answer show the wheel released
	// everything due until then.
	got := waitFire(p.broker, witness, answered.Add(2*time.Second))

	for _, s := range scheds[:2] {
		fires := got[s.id]
		first := fires[1]
		if first == nil {
			t.Fatalf("%q: no first fire", s.text)
		}
		// The first fire is the first match after the broker's send time,
		// somewhere between before and after.
		f1 := time.UnixMilli(first.fireMs)
		if lo, hi := testzone.Fires(loc, s.match, s.before, s.before.Add(time.Minute))[0], testzone.Fires(loc, s.match, s.after, s.after.Add(time.Minute))[0]; f1.Before(lo) || f1.After(hi) {
			t.Fatalf("%q: first fire due %s, want the first after the send: %s..%s", s.text, f1.UTC(), lo.UTC(), hi.UTC())
		}
		want := append([]time.Time{f1}, testzone.Fires(loc, s.match, f1, answered.Add(time.Second))...)
		last := int64(len(fires))
		for seq := int64(1); seq <= last; seq++ {
			f, ok := fires[seq]
			switch {
			case !ok:
				t.Fatalf("%q: fire %d missing of %d", s.text, seq, last)
			case f.count != 1:
				t.Fatalf("%q: fire %d stored %d times", s.text, seq, f.count)
			case f.storeMs < f.fireMs:
				t.Fatalf("%q: fire %d early: stored %d, due %d", s.text, seq, f.storeMs, f.fireMs)
			case f.storeMs > f.fireMs+30_000:
				t.Fatalf("%q: fire %d stored %d ms after its due time", s.text, seq, f.storeMs-f.fireMs)
			case seq > int64(len(want)):
				t.Fatalf("%q: fire %d due %s, more than a period after the cancel answered at %s", s.text, seq,
					time.UnixMilli(f.fireMs).UTC(), answered.UTC())
			case f.fireMs != want[seq-1].UnixMilli():
				t.Fatalf("%q: fire %d due %s (wall %s), want %s (wall %s)", s.text, seq, time.UnixMilli(f.fireMs).UTC(),
					time.UnixMilli(f.fireMs).In(loc).Format("15:04:05 MST"), want[seq-1].UTC(), want[seq-1].In(loc).Format("15:04:05 MST"))
			}
		}
		// No gap before the cancel: every fire the oracle has before the
		// cancel was sent is stored (the cancel ends the series at the
		// first fire due after it).
		for i, w := range want {
			if w.Before(cancelSent) && int64(i) >= last {
				t.Fatalf("%q: fire %d due %s (before the cancel at %s) missing: %d stored", s.text, i+1, w.UTC(), cancelSent.UTC(), last)
			}
		}
		if !time.UnixMilli(fires[last].fireMs).After(fall) {
			t.Fatalf("%q: no fire after the fall back", s.text)
		}
		t.Logf("%q: %d fires, the last due %s", s.text, last, time.UnixMilli(fires[last].fireMs).In(loc).Format("15:04:05 MST"))
	}
}
