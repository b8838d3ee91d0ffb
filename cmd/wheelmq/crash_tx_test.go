package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// localTx is the producers' local database in the crash test: a
// transaction's decision exists once its local execution ran.
type localTx struct {
	mu       sync.Mutex
	decision map[string]primitive.LocalTransactionState // what a check finds
}

// ExecuteLocalTransaction commits every third transaction, rolls back the
// next, and leaves the third unknown (committed when checked).
func (l *localTx) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	var i int
	_, _ = fmt.Sscanf(string(m.Body), "tx-%d", &i)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch i % 3 {
	case 0:
		l.decision[string(m.Body)] = primitive.CommitMessageState
		return primitive.CommitMessageState
	case 1:
		l.decision[string(m.Body)] = primitive.RollbackMessageState
		return primitive.RollbackMessageState
	}
	l.decision[string(m.Body)] = primitive.CommitMessageState
	return primitive.UnkonwnState
}

// CheckLocalTransaction answers from the decisions; a transaction whose
// local execution never ran (its half message's answer was lost in the
// crash) is rolled back.
func (l *localTx) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.decision[string(m.Body)]; ok {
		return d
	}
	return primitive.RollbackMessageState
}

func (l *localTx) committed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for body, d := range l.decision {
		if d == primitive.CommitMessageState {
			out = append(out, body)
		}
	}
	sort.Strings(out)
	return out
}

// TestSIGKILLDuringTransactions kills the broker while a Go transaction
// producer commits, rolls back and leaves transactions open. After the
// restart on the same data directory, the group's new producer is checked
// about what was left open, and consumers get exactly the committed
// transactions, once each: no committed one lost, no rolled-back one
// delivered.
func TestSIGKILLDuringTransactions(t *testing.T) {
	t.Parallel() // its own processes and data directory; kills and restarts wait more than they compute
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	fast := []string{"--transaction-timeout", "1s", "--transaction-check-interval", "1s"}
	p1 := startProc(t, bin, dir, fast...)
	topic, group := processtest.Unique("crashtx"), processtest.Unique("txpg")
	resp := processtest.Invoke(t, p1.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	processtest.WaitRoute(t, p1.namesrv, topic)
	local := &localTx{decision: map[string]primitive.LocalTransactionState{}}
	prod := processtest.TransactionProducer(t, p1.namesrv, group, local)

	sent := make(chan int, 1024)
	done := make(chan struct{})
	go func() { // the producer keeps going until the broker is gone
		defer close(done)
		for i := 0; i < 1000; i++ {
			body := fmt.Sprintf("tx-%d", i)
			if _, err := prod.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body))); err != nil {
				return
			}
			sent <- i
		}
	}()
	for n := 0; n < 90; n++ {
		select {
		case <-sent:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d transactions in 30 s", n)
		}
	}
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p1.wait(t, 10*time.Second)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("producer still sending a minute after the kill")
	}
	_ = prod.Shutdown()

	p2 := startProc(t, bin, dir, fast...)
	processtest.WaitRoute(t, p2.namesrv, topic)
	prod2 := processtest.TransactionProducer(t, p2.namesrv, group, local)
	// The Go client heartbeats to the brokers of the topics it sent to: one
	// send makes the broker know whom to ask about the open transactions.
	if _, err := prod2.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("tx-999999"))); err != nil {
		t.Fatalf("send after the restart: %v", err)
	}
	want := local.committed()
	_, rec := processtest.PushConsumer(t, p2.namesrv, processtest.Unique("cg"), topic, "*")
	if !rec.WaitFor(len(want), 60*time.Second) {
		t.Fatalf("after SIGKILL: consumed %d of %d committed transactions", rec.Len(), len(want))
	}
	deadline := time.Now().Add(60 * time.Second)
	for scrape(t, p2.metrics, "wheelmq_transaction_open") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%v transactions still open a minute after the restart", scrape(t, p2.metrics, "wheelmq_transaction_open"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	seen := map[string]int{}
	for _, m := range rec.Snapshot() {
		seen[string(m.Body)]++
	}
	committed := map[string]bool{}
	for _, body := range local.committed() {
		committed[body] = true
		if seen[body] != 1 {
			t.Errorf("committed %s consumed %d times", body, seen[body])
		}
	}
	for body, n := range seen {
		if !committed[body] {
			t.Errorf("%s consumed %d times but never committed", body, n)
		}
	}
	t.Logf("%d committed transactions consumed exactly once after the kill", len(committed))
}

// scrape sums the samples of one metric family on the /metrics page.
func scrape(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := testHTTP.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? ([0-9.e+-]+)$`)
	sum := 0.0
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		sum += v
	}
	return sum
}
