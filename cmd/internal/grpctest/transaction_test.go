package grpctest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// fastChecks makes the broker ask about open transactions within seconds.
func fastChecks(c *pipeline.Config) {
	c.TransactionTimeout = time.Second
	c.TransactionCheckInterval = time.Second
}

// TestTransactionCommitRollback: a committed half message becomes visible
// in its topic, a rolled-back one never does.
func TestTransactionCommitRollback(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, nil, nil)
	topic := processtest.Unique("grpc_tx")
	processtest.CreateTopic(t, n, topic, 2)
	checked := atomic.Int32{}
	p := producer(t, sdkConfig(n, ""), []string{topic}, rmq.WithTransactionChecker(&rmq.TransactionChecker{
		Check: func(*rmq.MessageView) rmq.TransactionResolution { checked.Add(1); return rmq.ROLLBACK }}))
	send := func(body string) (string, rmq.Transaction) {
		tx := p.BeginTransaction()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs, err := p.SendWithTransaction(ctx, &rmq.Message{Topic: topic, Body: []byte(body)}, tx)
		if err != nil {
			t.Fatalf("send %s with transaction: %v", body, err)
		}
		if rs[0].TransactionId == "" {
			t.Fatalf("send %s: no transaction id", body)
		}
		return rs[0].MessageID, tx
	}
	commitID, tx1 := send("commit-me")
	rollbackID, tx2 := send("roll-me-back")
	if got := byUniq(allRecords(t, n, topic, 2)); len(got) != 0 {
		t.Fatalf("half messages visible before the end of their transactions: %d", len(got))
	}
	if err := tx1.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := tx2.RollBack(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	waitFor(t, 10*time.Second, "committed message visible", func() bool {
		_, ok := byUniq(allRecords(t, n, topic, 2))[commitID]
		return ok
	})
	time.Sleep(500 * time.Millisecond)
	if _, ok := byUniq(allRecords(t, n, topic, 2))[rollbackID]; ok {
		t.Fatal("rolled-back message is visible")
	}
	if c := checked.Load(); c != 0 {
		t.Fatalf("checker called %d times for ended transactions", c)
	}
}

// TestTransactionCheckBack: a transaction left open is asked about over
// the Telemetry stream (CHECK_TRANSACTION_STATE relayed as
// recover_orphaned_transaction_command); the checker's COMMIT makes it
// visible.
func TestTransactionCheckBack(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	withSSL(t, false)
	n := node(t, fastChecks, nil)
	topic := processtest.Unique("grpc_txcheck")
	processtest.CreateTopic(t, n, topic, 2)
	var checkedID atomic.Value
	p := producer(t, sdkConfig(n, ""), []string{topic}, rmq.WithTransactionChecker(&rmq.TransactionChecker{
		Check: func(mv *rmq.MessageView) rmq.TransactionResolution {
			checkedID.Store(mv.GetMessageId())
			return rmq.COMMIT
		}}))
	tx := p.BeginTransaction()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := p.SendWithTransaction(ctx, &rmq.Message{Topic: topic, Body: []byte("decided-by-check")}, tx)
	if err != nil {
		t.Fatalf("send with transaction: %v", err)
	}
	id := rs[0].MessageID
	waitFor(t, 30*time.Second, "checked transaction committed and visible", func() bool {
		_, ok := byUniq(allRecords(t, n, topic, 2))[id]
		return ok
	})
	if got, _ := checkedID.Load().(string); got != id {
		t.Fatalf("checker saw message id %q, want %q", got, id)
	}
}
