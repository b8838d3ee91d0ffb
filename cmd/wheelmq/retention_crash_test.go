package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// scrapeSum sums the samples of a metric family on a /metrics endpoint.
func scrapeSum(addr, name string) float64 {
	resp, err := testHTTP.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// sender sends 2 KiB messages in a loop and records what was acknowledged
// (body -> queue offset) until stopped.
type sender struct {
	mu    sync.Mutex
	acked map[string]int64
}

func (s *sender) run(t *testing.T, namesrv, topic, prefix string, stop <-chan struct{}) *sync.WaitGroup {
	prod := processtest.Producer(t, namesrv)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer prod.Shutdown()
		pad := strings.Repeat("x", 2048)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := fmt.Sprintf("%s-%06d-%s", prefix, i, pad)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			res, err := prod.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
			cancel()
			if err == nil && res.Status == primitive.SendOK {
				s.mu.Lock()
				s.acked[body[:len(prefix)+7]] = res.QueueOffset
				s.mu.Unlock()
			}
		}
	}()
	return &wg
}

// killDuringDeletion waits until the process has deleted at least n
// segments, then SIGKILLs it at a random moment within the next 200 ms,
// while deletions go on.
func killDuringDeletion(t *testing.T, p *proc, n float64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for scrapeSum(p.metrics, "wheelmq_retention_segments_deleted_total") < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %v segments deleted in 60 s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 10*time.Second)
}

// TestSIGKILLDuringRetention SIGKILLs the broker twice at random moments
// of a deletion-heavy run (64 KiB segments, a one-second retention,
// deletions every 100 ms) with timer messages pending, then restarts it
// without retention: it starts, every acknowledged message at or above
// its queue's minimum is consumed (nothing kept is lost), and every timer
// is delivered, none early.
func TestSIGKILLDuringRetention(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	small := []string{"--commitlog-segment-size", "65536", "--max-message-size", "8192"}
	heavy := append([]string{"--retention", "1s", "--retention-at", "any", "--retention-interval", "100ms"}, small...)
	topic := processtest.Unique("retcrash")
	timerTopic := processtest.Unique("retcrashtimer")
	s := &sender{acked: map[string]int64{}}
	due := map[string]int64{}
	for cycle := 0; cycle < 2; cycle++ {
		p := startProc(t, bin, dir, heavy...)
		for _, tp := range []string{topic, timerTopic} {
			resp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
				"topic": tp, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil))
			if resp.Code != remoting.Success {
				t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
			}
			processtest.WaitRoute(t, p.namesrv, tp)
		}
		stop := make(chan struct{})
		wg := s.run(t, p.namesrv, topic, fmt.Sprintf("c%d", cycle), stop)
		if cycle == 1 {
			// Timers due after the final restart, sent while deletions run.
			prod := processtest.Producer(t, p.namesrv)
			at := time.Now().Add(8 * time.Second)
			for i := 0; i < 10; i++ {
				m := primitive.NewMessage(timerTopic, []byte(fmt.Sprintf("timer-%d", i)))
				m.WithDelayTimestamp(at)
				if res, err := prod.SendSync(context.Background(), m); err == nil && res.Status == primitive.SendOK {
					due[string(m.Body)] = at.UnixMilli()
				}
			}
			_ = prod.Shutdown()
			if len(due) < 8 {
				t.Fatalf("only %d of 10 timers acknowledged", len(due))
			}
		}
		killDuringDeletion(t, p, 5)
		close(stop)
		wg.Wait()
	}

	p := startProc(t, bin, dir, small...)
	minResp := processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.GetMinOffset,
		map[string]string{"topic": topic, "queueId": "0"}, nil))
	kept, err := strconv.ParseInt(minResp.Field("offset"), 10, 64)
	if err != nil || kept <= 0 {
		t.Fatalf("min offset after the crashes %q (%v): nothing was deleted?", minResp.Field("offset"), err)
	}
	want := map[string]int64{}
	for b, off := range s.acked {
		if off >= kept {
			want[b] = off
		}
	}
	t.Logf("%d acknowledged, %d kept from offset %d", len(s.acked), len(want), kept)
	if len(want) == 0 {
		t.Fatal("no acknowledged message kept")
	}
	group := processtest.Unique("cg")
	processtest.Invoke(t, p.broker, remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": strconv.FormatInt(kept, 10)}, nil))
	processtest.WaitRoute(t, p.namesrv, topic)
	_, rec := processtest.PushConsumer(t, p.namesrv, group, topic, "*")
	_, timers := processtest.PushConsumer(t, p.namesrv, processtest.Unique("cgt"), timerTopic, "*")
	// Sends whose acknowledgement a kill lost are stored too: wait for the
	// kept ones themselves, not for a count.
	if !rec.WaitUntil(processtest.HasBodies(want, 9), 60*time.Second) {
		t.Fatalf("not every one of %d kept messages arrived within 60 s (%d messages received)", len(want), rec.Len())
	}
	got := map[string]int64{}
	for _, m := range rec.Snapshot() {
		got[string(m.Body[:9])] = m.QueueOffset
	}
	for b, off := range want {
		if g, ok := got[b]; !ok || g != off {
			t.Fatalf("kept message %s at offset %d lost (got offset %d, present %v)", b, off, g, ok)
		}
	}
	if !timers.WaitFor(len(due), 40*time.Second) {
		t.Fatalf("%d of %d timers delivered after the crashes", timers.Len(), len(due))
	}
	for _, m := range timers.Snapshot() {
		if m.StoreTimestamp < due[string(m.Body)] {
			t.Fatalf("%s delivered early", m.Body)
		}
	}
}
