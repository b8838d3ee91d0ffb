package process_test

// The power-loss test's workload: plain, timer and transactional sends,
// a committing push consumer and a POP consumer (powerloss_pop_test.go).

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/message"
)

// load runs the workload against n until the returned stop is called.
func (r *plRun) load(n *process.Node, loop int) (stop func()) {
	t := r.t
	ns := primitive.NewPassthroughResolver([]string{n.NamesrvAddr()})
	opts := func(group string) []producer.Option {
		return []producer.Option{producer.WithNsResolver(ns), producer.WithGroupName(group),
			producer.WithInstanceName(processtest.Unique("pl")), producer.WithRetry(0),
			producer.WithSendMsgTimeout(3 * time.Second)}
	}
	processtest.QuietClient()
	p, err := producer.NewDefaultProducer(opts(processtest.Unique("pl_pg"))...)
	if err != nil || p.Start() != nil {
		t.Fatalf("plain producer: %v", err)
	}
	tp, err := rocketmq.NewTransactionProducer(r, opts(plTxGroup)...)
	if err != nil || tp.Start() != nil {
		t.Fatalf("transaction producer: %v", err)
	}
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(plGroup),
		consumer.WithInstance(processtest.Unique("plc")))
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	if err := c.Subscribe(plTopic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			return consumer.ConsumeSuccess, nil
		}); err != nil || c.Start() != nil {
		t.Fatalf("consumer start: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	send := func(kind opKind, seed int64, do func(o *plOp, rng *rand.Rand) (string, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for ctx.Err() == nil {
				o := r.hist.invoke(kind, loop)
				id, err := do(o, rng)
				r.hist.answered(o, id, err)
				if err != nil {
					time.Sleep(20 * time.Millisecond) // the broker is going: do not spin
				}
			}
		}()
	}
	sendCtx := context.Background() // a send under way when the load stops finishes: its answer is history
	for range 2 {
		send(opPlain, r.rng.Int63(), func(o *plOp, _ *rand.Rand) (string, error) {
			res, err := p.SendSync(sendCtx, primitive.NewMessage(plTopic, []byte(o.id)))
			return sendResult(res, err)
		})
	}
	send(opTimer, r.rng.Int63(), func(o *plOp, rng *rand.Rand) (string, error) {
		o.dueMs = time.Now().UnixMilli() + 200 + rng.Int63n(plMaxDelayMs-200)
		m := primitive.NewMessage(plTimerTopic, []byte(o.id))
		m.WithProperty(message.PropTimerDeliverMS, strconv.FormatInt(o.dueMs, 10))
		res, err := p.SendSync(sendCtx, m)
		time.Sleep(time.Millisecond)
		return sendResult(res, err)
	})
	send(opTx, r.rng.Int63(), func(o *plOp, rng *rand.Rand) (string, error) {
		o.commit = rng.Intn(2) == 0
		r.mu.Lock()
		r.outcomes[o.id] = o.commit
		r.mu.Unlock()
		res, err := tp.SendMessageInTransaction(sendCtx, primitive.NewMessage(plTxTopic, []byte(o.id)))
		time.Sleep(time.Millisecond)
		if err != nil {
			return "", err
		}
		return sendResult(res.SendResult, nil)
	})
	send(opPop, r.rng.Int63(), func(o *plOp, _ *rand.Rand) (string, error) {
		res, err := p.SendSync(sendCtx, primitive.NewMessage(plPopTopic, []byte(o.id)))
		time.Sleep(2 * time.Millisecond) // fewer than the plain sends: the consumer pops them all
		return sendResult(res, err)
	})
	wg.Add(1)
	go func(seed int64) {
		defer wg.Done()
		r.popLoop(ctx, n, loop, seed)
	}(r.rng.Int63())
	return func() {
		cancel()
		wg.Wait()
		_ = c.Shutdown()
		_ = tp.Shutdown()
		_ = p.Shutdown()
	}
}

// sendResult turns a send's answer into the offset message id, or an error.
func sendResult(res *primitive.SendResult, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if res == nil || res.Status != primitive.SendOK {
		return "", fmt.Errorf("send status %v", res)
	}
	return res.OffsetMsgID, nil
}

// ExecuteLocalTransaction implements primitive.TransactionListener: the
// outcome the sender chose.
func (r *plRun) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return r.outcome(string(m.Body))
}

// CheckLocalTransaction implements primitive.TransactionListener: the same
// outcome, when the broker asks.
func (r *plRun) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	return r.outcome(string(m.Body))
}

func (r *plRun) outcome(id string) primitive.LocalTransactionState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if commit, ok := r.outcomes[id]; ok && commit {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}
