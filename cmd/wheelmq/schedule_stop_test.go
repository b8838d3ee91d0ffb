package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/timer"
	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// TestSIGKILLAfterScheduleCancel cancels ten @every 20ms schedules
// (CANCEL_TIMER_MESSAGE, --timer-schedule-min-interval 20ms) while they
// fire, SIGKILLs the broker as soon as the last cancel is answered (their
// next-fire records still queued in the wheel) and restarts it on the same
// data: the restarted broker stores no fire of a cancelled schedule (it
// reads the stop records from the CommitLog before its first release),
// each stored fire is stored once, without a gap, and an @every 1s witness
// goes on firing; each cancel's stop record is there once. (The cancel of the first pending fire, TIMER_DEL, ends
// a schedule by itself when it reaches the wheel in time, as it does here;
// the stop record's own share, a next-fire record that reaches the wheel
// late, is tested in actors/timer, TestStoppedScheduleSurvivesRestart.)
func TestSIGKILLAfterScheduleCancel(t *testing.T) {
	t.Parallel() // waits more than it computes
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProc(t, bin, dir, "--timer-schedule-min-interval=20ms")
	topic := processtest.Unique("recurstop")
	resp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	processtest.WaitRoute(t, p.namesrv, topic)
	prod := processtest.Producer(t, p.namesrv)
	type sent struct{ id, offsetID string }
	var scheds []sent
	for i := range 11 { // the last is the witness
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("stop-%d", i)))
		text := "@every 20ms"
		if i == 10 {
			text = "@every 1s"
		}
		m.WithProperty(schedule.Prop, text)
		res, err := prod.SendSync(context.Background(), m)
		if err != nil {
			t.Fatalf("send schedule %d: %v", i, err)
		}
		scheds = append(scheds, sent{res.MsgID, res.OffsetMsgID})
	}
	_ = prod.Shutdown()
	cancelled, witness := scheds[:10], scheds[10]

	// waitFires waits until each of ids has a stored fire due at or after
	// untilMs.
	waitFires := func(addr string, untilMs int64, ids ...sent) map[string]map[int64]*storedFire {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			got := storedFires(t, addr, topic)
			done := true
			for _, s := range ids {
				last := int64(0)
				for _, f := range got[s.id] {
					last = max(last, f.fireMs)
				}
				done = done && last >= untilMs
			}
			if done {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("fires stopped: not every schedule has a fire due at %d", untilMs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFires(p.broker, time.Now().Add(1500*time.Millisecond).UnixMilli(), scheds...) // the witness fired once or twice

	for _, s := range cancelled {
		resp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.CancelTimerMessage,
			map[string]string{"msgId": s.offsetID}, nil))
		if resp.Code != remoting.Success {
			t.Fatalf("cancel %s: code %d %s", s.id, resp.Code, resp.Remark)
		}
	}
	answered := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)
	restarted := time.Now()
	p = startProc(t, bin, dir, "--timer-schedule-min-interval=20ms")
	// Two witness fires due after the restart: the wheel released what
	// was due until then.
	got := waitFires(p.broker, time.Now().Add(2*time.Second).UnixMilli(), witness)
	t.Logf("cancels answered %v before the kill; restarted in %v", restarted.Sub(answered).Round(time.Millisecond),
		time.Since(restarted).Round(time.Millisecond))

	for _, s := range cancelled {
		fires := got[s.id]
		if len(fires) < 2 {
			t.Fatalf("schedule %s: %d fires before its cancel, want at least 2", s.id, len(fires))
		}
		for seq := int64(1); seq <= int64(len(fires)); seq++ {
			f, ok := fires[seq]
			switch {
			case !ok:
				t.Fatalf("schedule %s: fire %d missing of %d", s.id, seq, len(fires))
			case f.count != 1:
				t.Fatalf("schedule %s: fire %d stored %d times", s.id, seq, f.count)
			case f.storeMs >= restarted.UnixMilli():
				t.Fatalf("schedule %s: fire %d (due %d) stored at %d by the restarted broker, after its cancel",
					s.id, seq, f.fireMs, f.storeMs)
			}
		}
	}
	if w := got[witness.id]; len(w) < 4 {
		t.Fatalf("the witness fired %d times", len(w))
	}
	// Each cancel's stop record survived the kill, once (QUERY_MESSAGE by
	// the schedule's id under the stop topic).
	s := &admin.Session{Timeout: 10 * time.Second}
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second) // the index may still be catching up after the restart
	for _, c := range cancelled {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			a, err := s.QueryMessages(ctx, p.broker, admin.MessageQuery{Topic: timer.StopTopic, Key: c.id, Unique: true})
			cancel()
			if err != nil {
				t.Fatalf("query the stop record of %s: %v", c.id, err)
			}
			if len(a.Records) > 1 || len(a.Records) == 1 && message.DecodeProperties(a.Records[0].Properties)[message.PropRealTopic] != topic {
				t.Fatalf("schedule %s: stop records %+v, want one for topic %s", c.id, a.Records, topic)
			}
			if len(a.Records) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("schedule %s: no stop record", c.id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
