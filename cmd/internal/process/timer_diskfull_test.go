package process_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// TestTimerStoreReopensAfterDiskFull fills the disk under the timer store
// while timer messages arrive: the TimerLog's write fails, the timer stages
// pause (wheelmq_timer_store_failed is 1) while the broker goes on storing
// and serving everything else, and once the disk has room again the store
// reopens by itself (tail repair and replay) and every timer acknowledged
// is delivered, none early, none twice.
func TestTimerStoreReopensAfterDiskFull(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	dir := t.TempDir()
	fs := &vfstest.FaultFS{}
	fs.Scope(filepath.Join(dir, "timer"))
	n := processtest.Start(t, processtest.Options{Dir: dir, Mutate: func(c *pipeline.Config) { c.StoreFS = fs }})
	topic := processtest.Unique("timerfull")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	due := map[string]int64{}
	send := func(id string, in time.Duration) {
		t.Helper()
		at := time.Now().Add(in).UnixMilli()
		m := primitive.NewMessage(topic, []byte(id))
		m.WithProperty(message.PropTimerDeliverMS, strconv.FormatInt(at, 10))
		if res, err := p.SendSync(context.Background(), m); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", id, res, err)
		}
		due[id] = at
	}
	for i := range 5 {
		send(fmt.Sprintf("before-%d", i), 1500*time.Millisecond)
	}
	fs.Full(true)
	for i := range 5 {
		send(fmt.Sprintf("full-%d", i), 1500*time.Millisecond) // the CommitLog takes them; the TimerLog cannot
	}
	waitFor(t, 10*time.Second, "the timer store to fail", func() bool { return metricValue(t, n, "wheelmq_timer_store_failed") == 1 })
	if resp := processtest.Invoke(t, n.BrokerAddr(), processtest.SendRequest(topic, 0, []byte("plain"), nil)); resp.Code != remoting.Success {
		t.Fatalf("plain send while the timer store is failed: code %d %s", resp.Code, resp.Remark)
	}
	time.Sleep(300 * time.Millisecond) // a few reopen attempts on the full disk
	if v := metricValue(t, n, "wheelmq_timer_store_failed"); v != 1 {
		t.Fatalf("timer store reopened on a full disk (failed=%v)", v)
	}
	fs.Full(false)
	waitFor(t, 10*time.Second, "the timer store to reopen", func() bool { return metricValue(t, n, "wheelmq_timer_store_failed") == 0 })
	for i := range 5 {
		send(fmt.Sprintf("after-%d", i), 500*time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		recs, err := processtest.ReadQueue(ctx, c, topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range recs {
			got[string(r.Body)]++
			if at, ok := due[string(r.Body)]; ok && r.StoreTimestamp < at {
				t.Fatalf("timer %s delivered %d ms early", r.Body, at-r.StoreTimestamp)
			}
		}
		done := got["plain"] == 1
		for id := range due {
			if got[id] > 1 {
				t.Fatalf("timer %s delivered %d times", id, got[id])
			}
			done = done && got[id] == 1
		}
		if done {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("not every timer delivered after the reopen: %v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
