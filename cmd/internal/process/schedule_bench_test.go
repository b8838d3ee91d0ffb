package process_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	wheelsched "github.com/wheelmq/wheelmq/actors/timer/schedule"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// BenchmarkRecurringTimers sends WHEELMQ_SCHEDULES (default 10,000)
// recurring timers "@every 1s" to an in-process broker (async sends of the
// native producer over 8 queues), lets them fire for
// WHEELMQ_SCHEDULE_SECONDS (default 10) seconds after the last send, then
// reads every stored fire back and logs: fires stored, the lateness of
// each fire (its store time minus its due time, WHEEL_SCHEDULE_FIRE_MS)
// p50, p99 and max, early fires (stored before due: must be 0), doubled
// fires (one schedule's sequence number stored twice: must be 0), gaps
// (a sequence number missing below a stored one: must be 0), the fires
// due before the end that were not stored yet (the broker behind), and the
// process's CPU time and heap allocations during the run divided by the
// fires stored in it (per fire: figures the machine's load does not change
// much), and the lateness of the fires due during the run alone (those due
// while the schedules were being sent come late when the sends take the
// broker's CPU).
// Run it with task bench:schedules; it runs once whatever b.N.
func BenchmarkRecurringTimers(b *testing.B) {
	n := processtest.Start(b, processtest.Options{})
	schedules := 10_000
	if v, err := strconv.Atoi(os.Getenv("WHEELMQ_SCHEDULES")); err == nil && v > 0 {
		schedules = v
	}
	seconds := 10
	if v, err := strconv.Atoi(os.Getenv("WHEELMQ_SCHEDULE_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	const queues = 8
	topic := processtest.Unique("benchrecur")
	processtest.CreateTopic(b, n, topic, queues)
	native := nativeProducer(b, []string{n.NamesrvAddr()}, producer.WithSendTimeout(30*time.Second),
		producer.WithMaxInflight(asyncWindow, 64<<20))
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sendErr error
	start := time.Now()
	for i := range schedules {
		m := producer.NewMessage(topic, []byte("tick-"+strconv.Itoa(i)))
		m.WithProperty(wheelsched.Prop, "@every 1s")
		wg.Add(1)
		err := native.SendAsync(ctx, m, func(_ *producer.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				sendErr = err
				mu.Unlock()
			}
		})
		if err != nil {
			wg.Done()
			b.Fatalf("send %d: %v", i, err)
		}
	}
	wg.Wait()
	if sendErr != nil {
		b.Fatalf("a schedule send failed: %v", sendErr)
	}
	sent := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runStartMs, cpuStart, mallocStart := time.Now().UnixMilli(), processCPU(b), ms.Mallocs
	time.Sleep(time.Duration(seconds) * time.Second) // the measured run: fires for this long
	runtime.ReadMemStats(&ms)
	endMs, cpuRun, mallocRun := time.Now().UnixMilli(), processCPU(b)-cpuStart, ms.Mallocs-mallocStart

	type key struct {
		origin string
		seq    int64
	}
	var lateness, steady []int64 // steady: of the fires due in the run (after the sends' catch-up)
	count := map[key]int{}
	firstDue := map[string]int64{}
	maxSeq := map[string]int64{}
	early, inRun := 0, 0
	readStart := time.Now()
	// The schedules go on firing while their fires are read: each queue
	// is read (8 at once) up to the first fire stored after the run.
	var readMu sync.Mutex
	var readErr error
	var rg sync.WaitGroup
	for q := range int32(queues) {
		rg.Go(func() {
			recs, err := readUntil(ctx, n.BrokerAddr(), topic, q, endMs)
			readMu.Lock()
			defer readMu.Unlock()
			if err != nil {
				readErr = err
				return
			}
			for _, r := range recs {
				props := message.DecodeProperties(r.Properties)
				seq, _ := strconv.ParseInt(props[wheelsched.PropSeq], 10, 64)
				due, _ := strconv.ParseInt(props[wheelsched.PropFireMs], 10, 64)
				o := props[wheelsched.PropOrigin]
				count[key{o, seq}]++
				lateness = append(lateness, r.StoreTimestamp-due)
				if due > runStartMs {
					steady = append(steady, r.StoreTimestamp-due)
				}
				if r.StoreTimestamp < due {
					early++
				}
				if r.StoreTimestamp > runStartMs {
					inRun++
				}
				if seq == 1 {
					firstDue[o] = due
				}
				maxSeq[o] = max(maxSeq[o], seq)
			}
		})
	}
	rg.Wait()
	if readErr != nil {
		b.Fatal(readErr)
	}
	doubled, gaps, behind := 0, 0, 0
	for _, c := range count {
		if c > 1 {
			doubled += c - 1
		}
	}
	for o, top := range maxSeq {
		for s := int64(1); s < top; s++ {
			if count[key{o, s}] == 0 {
				gaps++
			}
		}
	}
	for o, f := range firstDue {
		if due := (endMs-f)/1000 + 1; due > maxSeq[o] { // fires due by endMs, 1..due
			behind += int(due - maxSeq[o])
		}
	}
	behind += schedules - len(firstDue) // schedules with no fire stored at all: their first fires
	slices.Sort(lateness)
	slices.Sort(steady)
	pctOf := func(l []int64, p float64) int64 {
		if len(l) == 0 {
			return -1
		}
		return l[min(len(l)-1, int(float64(len(l))*p))]
	}
	pct := func(p float64) int64 { return pctOf(lateness, p) }
	cpuPerFire, mallocsPerFire := time.Duration(0), 0.0
	if inRun > 0 {
		cpuPerFire, mallocsPerFire = cpuRun/time.Duration(inRun), float64(mallocRun)/float64(inRun)
	}
	b.Logf("schedules %d (sent in %s), run %d s: %d fires stored (%.0f/s), lateness p50 %d ms p99 %d ms max %d ms, early %d, doubled %d, gaps %d, due but not stored by the end %d (read back in %s); run: %d fires stored, of those due in it lateness p50 %d ms p99 %d ms max %d ms, process CPU %s, %s and %.1f allocations per fire",
		schedules, sent.Round(time.Millisecond), seconds, len(lateness),
		float64(len(lateness))/(float64(endMs-start.UnixMilli())/1000), pct(0.5), pct(0.99), pct(1), early, doubled, gaps, behind,
		time.Since(readStart).Round(time.Millisecond), inRun, pctOf(steady, 0.5), pctOf(steady, 0.99), pctOf(steady, 1), cpuRun.Round(time.Millisecond), cpuPerFire.Round(100*time.Nanosecond), mallocsPerFire)
	if early > 0 || doubled > 0 || gaps > 0 {
		b.Fatalf("early %d, doubled %d, gaps %d: must all be 0", early, doubled, gaps)
	}
}

// processCPU is the CPU time (user + system) this process has used: the
// in-process broker's, the test's own being idle during the run.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readUntil pulls topic/queueID from offset 0 and returns its records up
// to the first one stored after endMs.
func readUntil(ctx context.Context, addr, topic string, queueID int32, endMs int64) ([]message.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []message.Record
	var offset int64
	for {
		resp, err := cl.Invoke(ctx, processtest.PullRequest("bench_reader", topic, queueID, offset, 32))
		if err != nil {
			return out, fmt.Errorf("read %s/%d at %d: %w", topic, queueID, offset, err)
		}
		if resp.Code == remoting.PullNotFound {
			return out, nil
		}
		if resp.Code != remoting.Success {
			return out, fmt.Errorf("read %s/%d at %d: code %d %s", topic, queueID, offset, resp.Code, resp.Remark)
		}
		recs, err := processtest.DecodeMessages(resp.Body)
		if err != nil {
			return out, err
		}
		for _, r := range recs {
			if r.StoreTimestamp > endMs {
				return out, nil
			}
			out = append(out, r)
		}
		next, err := strconv.ParseInt(resp.Field("nextBeginOffset"), 10, 64)
		if err != nil || next <= offset {
			return out, fmt.Errorf("read %s/%d at %d: nextBeginOffset %q", topic, queueID, offset, resp.Field("nextBeginOffset"))
		}
		offset = next
	}
}
