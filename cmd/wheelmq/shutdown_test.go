package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// shutdownLoops reads WHEELMQ_SHUTDOWN_LOOPS (default 3).
func shutdownLoops(t *testing.T) int {
	v := os.Getenv("WHEELMQ_SHUTDOWN_LOOPS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("WHEELMQ_SHUTDOWN_LOOPS=%q: want a positive number", v)
	}
	return n
}

// sendLedger records what the client saw for every async send, by body.
type sendLedger struct {
	mu      sync.Mutex
	ok      map[string]bool
	failed  map[string]string // body -> the error the client got
	issued  int
	answers int
	wg      sync.WaitGroup // one per send until its callback ran
}

func newSendLedger() *sendLedger {
	return &sendLedger{ok: map[string]bool{}, failed: map[string]string{}}
}

// issue counts a send about to be made; its callback must call answer once.
func (l *sendLedger) issue() {
	l.mu.Lock()
	l.issued++
	l.mu.Unlock()
	l.wg.Add(1)
}

// answer records one callback.
func (l *sendLedger) answer(body string, res *primitive.SendResult, err error) {
	l.mu.Lock()
	l.answers++
	switch {
	case err == nil && res != nil && res.Status == primitive.SendOK:
		l.ok[body] = true
	case err != nil:
		l.failed[body] = err.Error()
	default:
		l.failed[body] = fmt.Sprintf("status %v", res)
	}
	l.mu.Unlock()
	l.wg.Done()
}

// asyncLoad sends with SendAsync from several official Go client producers,
// each keeping up to window sends in flight, until stop is closed.
func asyncLoad(t *testing.T, namesrv, topic, prefix string, producers, window int, led *sendLedger,
	stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		prod := processtest.Producer(t, namesrv, producer.WithSendMsgTimeout(5*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots := make(chan struct{}, window)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case slots <- struct{}{}:
				}
				body := fmt.Sprintf("%s-p%d-%07d", prefix, p, i)
				led.issue()
				err := prod.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
					led.answer(body, res, err)
					<-slots
				}, primitive.NewMessage(topic, []byte(body)))
				if err != nil { // refused before it left the client (no route)
					led.answer(body, nil, err)
					<-slots
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	return &wg
}

// TestSIGTERMUnderAsyncSends SIGTERMs the broker several times (per flush
// mode) while official Go client producers send asynchronously with many
// sends in flight, restarting it on the same data directory each time,
// then reads every queue back. A clean stop answers every send it took
// with its true result: no send answered with an error may be stored (a
// client that retries it would store it twice), and every send answered OK
// must be.
func TestSIGTERMUnderAsyncSends(t *testing.T) {
	t.Parallel() // its own processes and data directory; kills and restarts wait more than they compute
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	loops := shutdownLoops(t)
	bin := buildBinary(t)
	for _, flush := range []string{"async", "sync"} {
		t.Run(flush, func(t *testing.T) {
			t.Parallel() // each flush mode its own process and data directory
			sigtermUnderLoad(t, bin, flush, loops)
		})
	}
}

// sigtermUnderLoad runs the loops of TestSIGTERMUnderAsyncSends in one
// data directory and checks the read-back.
func sigtermUnderLoad(t *testing.T, bin, flush string, loops int) {
	dir := t.TempDir()
	topic := processtest.Unique("sigterm")
	led := newSendLedger()
	const queues = tortureQueues
	for loop := 0; loop < loops; loop++ {
		p := startProc(t, bin, dir, "--flush", flush)
		if loop == 0 {
			createTortureTopic(t, p.broker, topic)
		}
		processtest.WaitRoute(t, p.namesrv, topic)
		began := led.snapshot()
		stop := make(chan struct{})
		senders := asyncLoad(t, p.namesrv, topic, fmt.Sprintf("l%d", loop), 4, 128, led, stop)
		time.Sleep(time.Duration(600+rand.IntN(600)) * time.Millisecond)
		before := led.snapshot()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// Sends go on while the broker stops: it must refuse them cleanly.
		if err := p.wait(t, 40*time.Second); err != nil {
			t.Fatalf("loop %d: SIGTERM exit: %v", loop, err)
		}
		close(stop)
		senders.Wait()
		if !waitGroupWithin(&led.wg, 30*time.Second) {
			t.Fatalf("loop %d: some async sends never got their callback", loop)
		}
		t.Logf("loop %d: %d sends answered before SIGTERM, %d after", loop, before-began, led.snapshot()-before)
	}
	p := startProc(t, bin, dir, "--flush", flush)
	c := rawClient(t, p.broker)
	defer c.Close()
	stored := map[string]int{}
	for q := int32(0); q < queues; q++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		recs, err := processtest.ReadQueue(ctx, c, topic, q)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			stored[string(r.Body)]++
		}
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	var storedFailed, lostOK, dups []string
	reasons, allReasons := map[string]int{}, map[string]int{}
	for body, why := range led.failed {
		allReasons[shortReason(why)]++
		if stored[body] > 0 {
			storedFailed = append(storedFailed, body)
			reasons[shortReason(why)]++
		}
	}
	for body := range led.ok {
		if stored[body] == 0 {
			lostOK = append(lostOK, body)
		}
	}
	for body, n := range stored {
		if n > 1 {
			dups = append(dups, body)
		}
	}
	sort.Strings(storedFailed)
	sort.Strings(lostOK)
	t.Logf("%s flush, %d SIGTERMs: %d sends issued, %d answered OK, %d answered with an error %v, %d stored; "+
		"%d stored but answered with an error %v, %d answered OK but not stored, %d stored twice",
		flush, loops, led.issued, len(led.ok), len(led.failed), allReasons, len(stored), len(storedFailed), reasons,
		len(lostOK), len(dups))
	if len(led.ok) == 0 {
		t.Fatal("no send answered OK: the load did not run")
	}
	if len(storedFailed) > 0 {
		t.Errorf("%d sends stored but answered with an error, e.g. %v (%s)", len(storedFailed),
			storedFailed[:min(3, len(storedFailed))], led.failed[storedFailed[0]])
	}
	if len(lostOK) > 0 {
		t.Errorf("%d sends answered OK but not stored, e.g. %v", len(lostOK), lostOK[:min(3, len(lostOK))])
	}
	if len(dups) > 0 {
		t.Errorf("%d bodies stored more than once, e.g. %v", len(dups), dups[:min(3, len(dups))])
	}
}

// snapshot is the number of callbacks so far.
func (l *sendLedger) snapshot() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answers
}

// shortReason sorts a client error into a kind, for the report.
func shortReason(err string) string {
	switch {
	case strings.HasPrefix(err, "CODE: "):
		code, _, _ := strings.Cut(strings.TrimPrefix(err, "CODE: "), ",")
		return "code " + code
	case strings.Contains(err, "request timeout"), strings.Contains(err, "deadline exceeded"):
		return "timeout"
	case strings.Contains(err, "connection refused"):
		return "connection refused"
	case strings.Contains(err, "closed network connection"), strings.Contains(err, "broken pipe"),
		strings.Contains(err, "connection reset"), strings.HasPrefix(err, "write tcp"):
		return "connection closed"
	}
	if len(err) > 40 {
		return err[:40]
	}
	return err
}

// waitGroupWithin waits for wg, at most d.
func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }() // ends with wg (every send's callback runs by its timeout)
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
