package process_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// txBook is the producers' local database: what executing each
// transaction decides, and what a check finds.
type txBook struct {
	mu      sync.Mutex
	exec    map[string]primitive.LocalTransactionState // by body
	check   map[string]primitive.LocalTransactionState // by body; absent: rollback
	checked map[string][]string                        // body -> producers that were asked
	first   map[string]time.Time                       // body -> first check
}

func newTxBook() *txBook {
	return &txBook{exec: map[string]primitive.LocalTransactionState{},
		check: map[string]primitive.LocalTransactionState{}, checked: map[string][]string{}, first: map[string]time.Time{}}
}

func (b *txBook) plan(body string, exec, check primitive.LocalTransactionState) {
	b.mu.Lock()
	b.exec[body], b.check[body] = exec, check
	b.mu.Unlock()
}

// producer is one producer's listener on the book.
func (b *txBook) producer(name string) primitive.TransactionListener {
	return &txListener{b: b, name: name}
}

func (b *txBook) checksOf(body string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.checked[body]...)
}

func (b *txBook) firstCheck(body string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.first[body]
}

type txListener struct {
	b    *txBook
	name string
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	return l.b.exec[string(m.Body)]
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	body := string(m.Body)
	l.b.checked[body] = append(l.b.checked[body], l.name)
	if _, ok := l.b.first[body]; !ok {
		l.b.first[body] = time.Now()
	}
	if s, ok := l.b.check[body]; ok {
		return s
	}
	return primitive.RollbackMessageState
}

// fastChecks makes the broker check open transactions after 300 ms and
// every 400 ms after that.
func fastChecks(c *pipeline.Config) {
	c.TransactionTimeout, c.TransactionCheckInterval, c.TransactionTick = 300*time.Millisecond, 400*time.Millisecond,
		20*time.Millisecond
}

// metric sums a metric family of the node's registry.
func metric(t *testing.T, n *process.Node, name string) float64 {
	t.Helper()
	fams, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}

// waitNoOpenTransactions waits until the broker holds no open transaction.
func waitNoOpenTransactions(t *testing.T, n *process.Node, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for metric(t, n, "wheelmq_transaction_open") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%v transactions still open after %s", metric(t, n, "wheelmq_transaction_open"), within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sendTx(t *testing.T, p interface {
	SendMessageInTransaction(context.Context, *primitive.Message) (*primitive.TransactionSendResult, error)
}, topic, body string, want primitive.LocalTransactionState) {
	t.Helper()
	res, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body)))
	if err != nil {
		t.Fatalf("send %s: %v", body, err)
	}
	if res.Status != primitive.SendOK || res.State != want || res.TransactionID == "" || res.OffsetMsgID == "" {
		t.Fatalf("send %s: status %v state %v txid %q offset id %q", body, res.Status, res.State, res.TransactionID, res.OffsetMsgID)
	}
}

// consumedExactly waits for want, then checks nothing else arrives (and
// nothing twice) until the broker holds no open transaction.
func consumedExactly(t *testing.T, n *process.Node, rec *processtest.Received, want []string) {
	t.Helper()
	if !rec.WaitFor(len(want), 30*time.Second) {
		t.Fatalf("consumed %d of %d: %v", rec.Len(), len(want), bodies(rec.Snapshot()))
	}
	waitNoOpenTransactions(t, n, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // a message wrongly released would have arrived by now
	sameSet(t, bodies(rec.Snapshot()), want)
}

// TestTransactionsWithGoProducer: the official Go transaction producer's
// commit and rollback, and an unknown local state resolved by the broker's
// check (to commit or to rollback). Consumers get exactly the committed
// messages, once each.
func TestTransactionsWithGoProducer(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	n := processtest.Start(t, processtest.Options{Mutate: fastChecks})
	topic, group := processtest.Unique("tx"), processtest.Unique("txpg")
	processtest.CreateTopic(t, n, topic, 2)
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	book := newTxBook()
	p := processtest.TransactionProducer(t, n.NamesrvAddr(), group, book.producer("p1"))

	var want []string
	for i := range 4 {
		for _, c := range []struct {
			prefix      string
			exec, check primitive.LocalTransactionState
		}{
			{"commit", primitive.CommitMessageState, primitive.RollbackMessageState},
			{"rollback", primitive.RollbackMessageState, primitive.CommitMessageState},
			{"unknown-commit", primitive.UnkonwnState, primitive.CommitMessageState},
			{"unknown-rollback", primitive.UnkonwnState, primitive.RollbackMessageState},
		} {
			body := fmt.Sprintf("%s-%d", c.prefix, i)
			book.plan(body, c.exec, c.check)
			sendTx(t, p, topic, body, c.exec)
			if strings.HasSuffix(c.prefix, "commit") {
				want = append(want, body)
			}
		}
	}
	// A relative delay counts from the commit: this one is committed by
	// its check, at least 300 ms after it was sent.
	delayed := primitive.NewMessage(topic, []byte("delayed"))
	delayed.WithProperty("TIMER_DELAY_MS", "1500")
	book.plan("delayed", primitive.UnkonwnState, primitive.CommitMessageState)
	if _, err := p.SendMessageInTransaction(context.Background(), delayed); err != nil {
		t.Fatalf("send delayed: %v", err)
	}
	want = append(want, "delayed")
	consumedExactly(t, n, rec, want)
	checkedAt := book.firstCheck("delayed")
	for _, m := range rec.Snapshot() {
		if string(m.Body) == "delayed" && m.StoreTimestamp < checkedAt.UnixMilli()+1500 {
			t.Errorf("delayed transaction delivered at %d, before its commit (after %d) + 1500 ms",
				m.StoreTimestamp, checkedAt.UnixMilli())
		}
	}
	for _, m := range rec.Snapshot() {
		timer := m.GetProperty("TIMER_OUT_MS") != "" // delivered timers keep REAL_TOPIC (docs/compatibility.md)
		if m.GetProperty("PGROUP") != group || m.GetProperty("UNIQ_KEY") == "" || m.GetProperty("TRAN_MSG") != "" ||
			(m.GetProperty("REAL_TOPIC") != "") != timer {
			t.Errorf("consumed %s with properties %v", m.Body, m.GetProperties())
		}
	}
	for i := range 4 {
		for _, prefix := range []string{"commit", "rollback"} {
			if got := book.checksOf(fmt.Sprintf("%s-%d", prefix, i)); len(got) != 0 {
				t.Errorf("%s-%d was ended by its producer but checked %d times", prefix, i, len(got))
			}
		}
		if got := book.checksOf(fmt.Sprintf("unknown-commit-%d", i)); len(got) == 0 {
			t.Errorf("unknown-commit-%d reached consumers without a check", i)
		}
	}
	if v := metric(t, n, "wheelmq_transaction_ends_total"); v != 17 {
		t.Errorf("wheelmq_transaction_ends_total = %v, want 17", v)
	}
}

// TestTransactionProducerRestart: a producer executes transactions that end
// unknown and stops before the broker checks them; the broker asks the
// group's new producer instead, which resolves them from the shared local
// state. A broker restart on the same data directory in the middle keeps
// what was open, ended and committed.
func TestTransactionProducerRestart(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	dir := t.TempDir()
	slow := func(c *pipeline.Config) { // nothing is checked before the producer is gone
		c.TransactionTimeout, c.TransactionTick = time.Hour, 20*time.Millisecond
	}
	n1 := processtest.Start(t, processtest.Options{Dir: dir, Mutate: slow})
	topic, group := processtest.Unique("txr"), processtest.Unique("txpg")
	processtest.CreateTopic(t, n1, topic, 2)
	book := newTxBook()
	p1 := processtest.TransactionProducer(t, n1.NamesrvAddr(), group, book.producer("p1"))
	var want []string
	for i := range 3 {
		for _, c := range []struct {
			prefix      string
			exec, check primitive.LocalTransactionState
		}{
			{"done", primitive.CommitMessageState, primitive.RollbackMessageState},
			{"undone", primitive.RollbackMessageState, primitive.CommitMessageState},
			{"open-commit", primitive.UnkonwnState, primitive.CommitMessageState},
			{"open-rollback", primitive.UnkonwnState, primitive.RollbackMessageState},
		} {
			body := fmt.Sprintf("%s-%d", c.prefix, i)
			book.plan(body, c.exec, c.check)
			sendTx(t, p1, topic, body, c.exec)
			if c.prefix == "done" || c.prefix == "open-commit" {
				want = append(want, body)
			}
		}
	}
	// The committed ones reach consumers before the restart.
	group1 := processtest.Unique("cg")
	c1, rec1 := processtest.PushConsumer(t, n1.NamesrvAddr(), group1, topic, "*")
	if !rec1.WaitFor(3, 30*time.Second) {
		t.Fatalf("before the restart: consumed %d of the 3 committed", rec1.Len())
	}
	time.Sleep(200 * time.Millisecond)
	sameSet(t, bodies(rec1.Snapshot()), []string{"done-0", "done-1", "done-2"})
	if err := p1.Shutdown(); err != nil {
		t.Fatalf("producer shutdown: %v", err)
	}
	_ = c1.Shutdown()
	if v := metric(t, n1, "wheelmq_transaction_open"); v != 6 {
		t.Fatalf("%v open transactions before the restart, want 6", v)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n1.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}

	n2 := processtest.Start(t, processtest.Options{Dir: dir, Mutate: fastChecks})
	processtest.WaitRoute(t, n2.NamesrvAddr(), topic)
	p2 := processtest.TransactionProducer(t, n2.NamesrvAddr(), group, book.producer("p2"))
	// Like any RocketMQ producer, the Go client heartbeats only to the
	// brokers of the topics it sends to (1 s after start, then every 30 s):
	// the new producer sends, so the broker knows whom to ask.
	book.plan("after-restart", primitive.CommitMessageState, primitive.RollbackMessageState)
	sendTx(t, p2, topic, "after-restart", primitive.CommitMessageState)
	want = append(want, "after-restart")
	_, rec := processtest.PushConsumer(t, n2.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	consumedExactly(t, n2, rec, want)
	for i := range 3 {
		for _, prefix := range []string{"open-commit", "open-rollback"} {
			body := fmt.Sprintf("%s-%d", prefix, i)
			got := book.checksOf(body)
			sort.Strings(got)
			if len(got) == 0 || got[0] != "p2" || got[len(got)-1] != "p2" {
				t.Errorf("%s was checked by %v, want the new producer p2", body, got)
			}
		}
	}
}
