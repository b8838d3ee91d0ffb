package process_test

// The power-loss test's checks of a recovered broker: what its queues
// hold, its consumer offsets, its timers and transactions at the end.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

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
	ops, held := r.hist.snapshot(), r.read(n, plTopic)
	found, _ := checkPresent(&v, ops, opPlain, held)
	checkKnown(&v, ops, opPlain, held)
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
		checkKnown(&v, ops, opTimer, timers)
		checkKnown(&v, ops, opTx, txs, "x-final-probe")
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
