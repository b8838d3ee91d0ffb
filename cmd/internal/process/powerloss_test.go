package process_test

// Power-loss torture: a broker in this process whose every file lives on
// storage/vfs/crashfs, under load from the official Go client (plain sends,
// timer messages, transactions committed and rolled back, a consumer
// committing offsets), crashed at a random moment: the file system forgets
// everything not synced (a strict crash), or keeps an arbitrary part of it
// (pages written back, a prefix of the directory changes), as an operating
// system crash or a power cut leaves a disk, which SIGKILL does not. A new
// broker opens what survived; loop after loop, in both flush modes. The
// checks (docs/operations.md, "What survives what"):
//
//   - sync flush: every send acknowledged before the crash is there; async
//     flush: every send acknowledged before the last completed fsync of its
//     CommitLog segment;
//   - no message is stored twice (every send has its own body and the
//     client does not retry);
//   - consumer offsets never point past their queue's end;
//   - timers: none delivered before its due time, none twice, every one
//     that had to survive delivered;
//   - transactions: none rolled back is delivered, every committed one whose
//     half message had to survive is delivered (by its END_TRANSACTION or
//     by a check), none twice.
//
// README's test command runs WHEELMQ_POWERLOSS_LOOPS=3 crashes per flush
// mode (the default); `task torture:powerloss LOOPS=50` runs long. Every
// crash's choices come from a seed the test logs (WHEELMQ_POWERLOSS_SEED
// replays a run's crashes; the load's timing is the machine's).

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

const (
	plTopic      = "pl_plain"
	plTimerTopic = "pl_timer"
	plTxTopic    = "pl_tx"
	plQueues     = 4
	plGroup      = "pl_consumer"
	plTxGroup    = "pl_tx_producer"
	plDataDir    = "/powerloss/data" // inside the crash file system
	plSegSize    = 8 << 20
	plMaxDelayMs = 2500
)

// envInt reads a positive integer from the environment (def when unset).
func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func TestPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("power-loss torture is not short")
	}
	loops := int(envInt(t, "WHEELMQ_POWERLOSS_LOOPS", 3))
	seed := envInt(t, "WHEELMQ_POWERLOSS_SEED", time.Now().UnixNano())
	t.Logf("seed %d (WHEELMQ_POWERLOSS_SEED=%d replays the crashes), %d crashes per flush mode", seed, seed, loops)
	// The Go client logs every rolled-back local transaction as an error
	// ("executeLocalTransaction but state unexpected"): half the load here.
	processtest.QuietClient() // once: it would set "error" again later
	rlog.SetLogLevel("fatal")
	t.Cleanup(func() { rlog.SetLogLevel("error") })
	for i, mode := range []writer.FlushMode{writer.FlushSync, writer.FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			r := &plRun{t: t, mode: mode, rng: rand.New(rand.NewSource(seed + int64(i))), fs: crashfs.New(),
				outcomes: map[string]bool{}}
			r.run(loops)
		})
	}
}

// plRun is one flush mode's run.
type plRun struct {
	t     *testing.T
	mode  writer.FlushMode
	rng   *rand.Rand
	fs    *crashfs.FS
	hist  plHistory
	stats plStats

	mu       sync.Mutex
	outcomes map[string]bool // transaction id -> commit
}

// start opens a broker on the run's file system.
func (r *plRun) start() *process.Node {
	return processtest.Start(r.t, processtest.Options{Dir: plDataDir, Mutate: func(c *pipeline.Config) {
		c.StoreFS, c.Flush, c.SegmentSize = r.fs, r.mode, plSegSize
		c.TransactionTimeout, c.TransactionCheckInterval, c.TransactionTick = 300*time.Millisecond, 300*time.Millisecond, 50*time.Millisecond
		c.OffsetFlushInterval = 100 * time.Millisecond
	}})
}

func (r *plRun) run(loops int) {
	t := r.t
	n := r.start()
	for _, topic := range []string{plTopic, plTimerTopic, plTxTopic} {
		processtest.CreateTopic(t, n, topic, plQueues)
	}
	for loop := 1; loop <= loops; loop++ {
		stop := r.load(n, loop)
		time.Sleep(time.Duration(400+r.rng.Intn(800)) * time.Millisecond)
		crashAt := time.Now()
		var after *crashfs.FS
		how := "strict"
		if loop%2 == 0 {
			after, how = r.fs.CrashRandom(rand.New(rand.NewSource(r.rng.Int63()))), "random"
			r.stats.random++
		} else {
			after = r.fs.Crash()
			r.stats.strict++
		}
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_ = n.Stop(ctx) // on the old file system: nothing it writes now is read again
		cancel()
		acked, must := r.hist.crashed(loop, crashAt, r.mode, after, plDataDir, plSegSize)
		r.stats.loops++
		r.stats.acked += acked
		r.stats.must += must
		t.Logf("crash %d (%s) at %d: %d sends acknowledged before it, %d had to survive", loop, how, crashAt.UnixMilli(), acked, must)
		r.fs = after
		n = r.start()
		r.checkPlain(n)
		r.checkOffsets(n)
	}
	r.finish(n)
	t.Logf("%s: %v", r.mode, r.stats)
}

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

// read reads every queue of topic and returns what it holds, by body,
// once dispatch has caught up with the CommitLog (after a restart it
// rebuilds the units a crash took).
func (r *plRun) read(n *process.Node, topic string) map[string][]stored {
	r.t.Helper()
	waitFor(r.t, 20*time.Second, "dispatch to catch up", func() bool {
		return metricValue(r.t, n, "wheelmq_store_dispatch_lag_bytes") == 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	held := map[string][]stored{}
	for q := range int32(plQueues) {
		recs, err := processtest.ReadQueue(ctx, c, topic, q)
		for try := 0; err != nil && strings.Contains(err.Error(), "being rebuilt") && try < 50; try++ {
			// A crash that kept unsynced pages out of order leaves damage:
			// the queue is rebuilt from the CommitLog meanwhile.
			time.Sleep(100 * time.Millisecond)
			recs, err = processtest.ReadQueue(ctx, c, topic, q)
		}
		if err != nil {
			r.t.Fatalf("read back %s/%d: %v", topic, q, err)
		}
		for _, rec := range recs {
			out, _ := message.LookupProperty(rec.Properties, message.PropTimerOutMS)
			held[string(rec.Body)] = append(held[string(rec.Body)], stored{storeMs: rec.StoreTimestamp, outMs: out})
		}
	}
	return held
}

// checkPlain checks the plain topic after a restart.
func (r *plRun) checkPlain(n *process.Node) {
	var v verdict
	found, _ := checkPresent(&v, r.hist.snapshot(), opPlain, r.read(n, plTopic))
	r.stats.plainFound = found
	if len(v.problems) > 0 {
		r.t.Fatalf("after crash %d (%s flush):\n%v", r.stats.loops, r.mode, &v)
	}
}

// checkOffsets checks that no committed consumer offset points past its
// queue's end.
func (r *plRun) checkOffsets(n *process.Node) {
	t := r.t
	for q := range plQueues {
		qs := strconv.Itoa(q)
		max := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.GetMaxOffset,
			map[string]string{"topic": plTopic, "queueId": qs}, nil))
		off := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.QueryConsumerOffset,
			map[string]string{"consumerGroup": plGroup, "topic": plTopic, "queueId": qs}, nil))
		if max.Code != remoting.Success {
			t.Fatalf("max offset of %s/%d: code %d %s", plTopic, q, max.Code, max.Remark)
		}
		if off.Code != remoting.Success {
			continue // no offset committed for this queue yet
		}
		m, _ := strconv.ParseInt(max.Field("offset"), 10, 64)
		o, _ := strconv.ParseInt(off.Field("offset"), 10, 64)
		r.stats.offsetChecks++
		for deadline := time.Now().Add(5 * time.Second); o > m && time.Now().Before(deadline); {
			// The queue's end as the CommitLog holds it: dispatch may still
			// be catching up after the restart.
			time.Sleep(50 * time.Millisecond)
			max = processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.GetMaxOffset,
				map[string]string{"topic": plTopic, "queueId": qs}, nil))
			m, _ = strconv.ParseInt(max.Field("offset"), 10, 64)
		}
		if o > m {
			t.Fatalf("after crash %d: %s's offset of %s/%d is %d, past the queue's end %d", r.stats.loops, plGroup, plTopic, q, o, m)
		}
	}
}

// finish waits on the last broker until every timer sent is due and every
// transaction was checked, then checks timers and transactions.
func (r *plRun) finish(n *process.Node) {
	t := r.t
	// The producer group answers the checks of the transactions whose end
	// a crash took.
	tp, err := rocketmq.NewTransactionProducer(r, producer.WithNsResolver(primitive.NewPassthroughResolver(
		[]string{n.NamesrvAddr()})), producer.WithGroupName(plTxGroup), producer.WithInstanceName(processtest.Unique("plf")))
	if err != nil || tp.Start() != nil {
		t.Fatalf("checking producer: %v", err)
	}
	defer func() { _ = tp.Shutdown() }()
	// The Go client heartbeats (and so is asked for checks) only to the
	// brokers of the topics it has sent to: one transaction of its own makes
	// the broker know it.
	r.mu.Lock()
	r.outcomes["x-final-probe"] = true
	r.mu.Unlock()
	if _, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage(plTxTopic, []byte("x-final-probe"))); err != nil {
		t.Fatalf("checking producer's first send: %v", err)
	}
	ops := r.hist.snapshot()
	var lastDue int64
	for _, o := range ops {
		lastDue = max(lastDue, o.dueMs)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		dueBy := time.Now().UnixMilli() - 1500 // the broker was down for a while after each crash
		timers, txs := r.read(n, plTimerTopic), r.read(n, plTxTopic)
		var v verdict
		delivered := checkTimers(&v, ops, timers, dueBy)
		committed, txDelivered := checkTransactions(&v, ops, txs)
		if (len(v.problems) == 0 && dueBy > lastDue) || time.Now().After(deadline) {
			if len(v.problems) > 0 {
				r.txDump(n, v.problems)
				t.Fatalf("%s flush, after %d crashes:\n%v", r.mode, r.stats.loops, &v)
			}
			r.stats.timersDelivered, r.stats.txCommitted, r.stats.txDelivered = delivered, committed, txDelivered
			r.stats.sends = len(ops)
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// txDump logs, for each transaction a check found wrong, what the broker
// holds of it: its half message, the op records that name it, and whether it
// was given up.
func (r *plRun) txDump(n *process.Node, problems []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	half, herr := processtest.ReadQueue(ctx, c, "RMQ_SYS_TRANS_HALF_TOPIC", 0)
	ops, oerr := processtest.ReadQueue(ctx, c, "RMQ_SYS_TRANS_OP_HALF_TOPIC", 0)
	maxt, _ := processtest.ReadQueue(ctx, c, "TRANS_CHECK_MAX_TIME_TOPIC", 0)
	r.t.Logf("TXDUMP half queue: %d records (%v), op queue: %d records (%v)", len(half), herr, len(ops), oerr)
	for _, p := range problems {
		f := strings.Fields(p)
		if len(f) < 2 || f[0] != "transaction" {
			continue
		}
		id := f[1]
		for _, o := range r.hist.snapshot() {
			if o.id == id {
				rec, err := r.readAt(n, o.offset)
				r.t.Logf("TXDUMP %s half acknowledged at commitlog offset %d: %s %v", id, o.offset, rec, err)
			}
		}
		for _, h := range half {
			if string(h.Body) == id {
				r.t.Logf("TXDUMP %s half at queue offset %d commitlog %d stored %d", id, h.QueueOffset, h.PhysicalOffset, h.StoreTimestamp)
				qs := strconv.FormatInt(h.QueueOffset, 10)
				for _, o := range ops {
					for _, x := range strings.Split(string(o.Body), ",") {
						if x == qs {
							r.t.Logf("TXDUMP %s op record at %d stored %d, properties %q", id, o.PhysicalOffset, o.StoreTimestamp, o.Properties)
						}
					}
				}
			}
		}
		for _, m := range maxt {
			if string(m.Body) == id {
				r.t.Logf("TXDUMP %s given up (TRANS_CHECK_MAX_TIME_TOPIC)", id)
			}
		}
	}
}

// readAt describes the record the broker holds at a CommitLog offset
// (VIEW_MESSAGE_BY_ID).
func (r *plRun) readAt(n *process.Node, offset int64) (string, error) {
	resp := processtest.Invoke(r.t, n.BrokerAddr(), remoting.NewRequest(remoting.ViewMessageByID,
		map[string]string{"offset": strconv.FormatInt(offset, 10)}, nil))
	if resp.Code != remoting.Success {
		return "", fmt.Errorf("code %d %s", resp.Code, resp.Remark)
	}
	recs, err := processtest.DecodeMessages(resp.Body)
	if err != nil || len(recs) == 0 {
		return "", fmt.Errorf("decode: %v", err)
	}
	m := recs[0]
	return fmt.Sprintf("topic %s queue %d/%d body %s props %q", m.Topic, m.QueueID, m.QueueOffset, m.Body, m.Properties), nil
}
