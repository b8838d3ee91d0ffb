package main

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// storedFires reads topic's queue 0 on the broker at addr and returns, per
// schedule (its original message id), the fires stored: seq -> how many
// times, and each seq's due and store time.
type storedFire struct {
	count           int
	fireMs, storeMs int64
}

func storedFires(t *testing.T, addr, topic string) map[string]map[int64]*storedFire {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs, err := processtest.ReadQueue(ctx, cl, topic, 0)
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	out := map[string]map[int64]*storedFire{}
	for _, r := range recs {
		props := message.DecodeProperties(r.Properties)
		origin := props[schedule.PropOrigin]
		seq, err := strconv.ParseInt(props[schedule.PropSeq], 10, 64)
		if origin == "" || err != nil {
			t.Fatalf("record at %d is no fire: %v", r.QueueOffset, props)
		}
		fireMs, _ := strconv.ParseInt(props[schedule.PropFireMs], 10, 64)
		if out[origin] == nil {
			out[origin] = map[int64]*storedFire{}
		}
		f := out[origin][seq]
		if f == nil {
			f = &storedFire{fireMs: fireMs, storeMs: r.StoreTimestamp}
			out[origin][seq] = f
		}
		f.count++
	}
	return out
}

// TestSIGKILLRecurringTimers kills the broker twice while @every 1s
// schedules fire and restarts it on the same data directory: every
// schedule's fires go on after each restart, each sequence number stored
// exactly once, with no gap (the fires due while the broker was down come
// late, once each), each a second after the one before and none stored
// before its due time.
func TestSIGKILLRecurringTimers(t *testing.T) {
	t.Parallel() // waits more than it computes
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProc(t, bin, dir)
	topic := processtest.Unique("recurcrash")
	resp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	processtest.WaitRoute(t, p.namesrv, topic)
	prod := processtest.Producer(t, p.namesrv)
	var origins []string
	for i := range 20 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("schedule-%d", i)))
		m.WithProperty(schedule.Prop, "@every 1s")
		res, err := prod.SendSync(context.Background(), m)
		if err != nil {
			t.Fatalf("send schedule %d: %v", i, err)
		}
		origins = append(origins, res.MsgID)
	}
	_ = prod.Shutdown()
	// waitFires waits until every schedule has a stored fire due at or
	// after untilMs.
	waitFires := func(addr string, untilMs int64) map[string]map[int64]*storedFire {
		deadline := time.Now().Add(40 * time.Second)
		for {
			got := storedFires(t, addr, topic)
			done := true
			for _, o := range origins {
				last := int64(0)
				for _, f := range got[o] {
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
	for kill := range 2 {
		waitFires(p.broker, time.Now().Add(1500*time.Millisecond).UnixMilli())
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = p.wait(t, 10*time.Second)
		t.Logf("kill %d done", kill+1)
		p = startProc(t, bin, dir)
	}
	got := waitFires(p.broker, time.Now().Add(2*time.Second).UnixMilli())
	for _, o := range origins {
		fires := got[o]
		var first int64
		for seq := int64(1); seq <= int64(len(fires)); seq++ {
			f, ok := fires[seq]
			switch {
			case !ok:
				t.Fatalf("schedule %s: fire %d missing of %d", o, seq, len(fires))
			case f.count != 1:
				t.Fatalf("schedule %s: fire %d stored %d times", o, seq, f.count)
			case f.storeMs < f.fireMs:
				t.Fatalf("schedule %s: fire %d early: stored %d, due %d", o, seq, f.storeMs, f.fireMs)
			case seq == 1:
				first = f.fireMs
			case f.fireMs != first+(seq-1)*1000:
				t.Fatalf("schedule %s: fire %d due %d, want %d", o, seq, f.fireMs, first+(seq-1)*1000)
			}
		}
	}
}
