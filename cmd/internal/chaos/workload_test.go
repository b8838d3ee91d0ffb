package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/history"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// workload is the chaos test's producers and consumers, all official Go
// clients, recording into one history.
type workload struct {
	t       *testing.T
	rec     *history.Recorder
	namesrv []string
	topic   string
	group   string
	seed    uint64

	// Producers send sync at Rate sends per second each; TimerShare of
	// the sends are timers due 1-20 s ahead, CancelShare of those are
	// cancelled right after their SEND_OK.
	Producers   int
	Rate        float64
	TimerShare  float64
	CancelShare float64
	// MaxDue is how far ahead timers are due at most (default 20 s; at
	// least 1 s).
	MaxDue time.Duration

	mu      sync.Mutex
	lastDue int64 // guarded by mu: the latest due time sent (Unix ms)

	stop chan struct{}
	wg   sync.WaitGroup
}

// codeRe finds the broker's answer code in the Go client's error text
// ("CODE: 1, DESC: ...").
var codeRe = regexp.MustCompile(`CODE: (\d+)`)

// startConsumers starts n push consumers of one group (clustering) that
// record a recv per delivery; the key is the message's KEYS (else its
// body: a delivered cancel record shows up as unexpected).
func (w *workload) startConsumers(n int) {
	for i := 0; i < n; i++ {
		proc := 100 + i
		c, err := consumer.NewPushConsumer(
			consumer.WithNsResolver(primitive.NewPassthroughResolver(w.namesrv)),
			consumer.WithGroupName(w.group),
			consumer.WithInstance(processtest.Unique("chaos-c")),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		)
		if err != nil {
			w.t.Fatalf("new push consumer: %v", err)
		}
		err = c.Subscribe(w.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				now := time.Now().UnixMilli()
				for _, m := range msgs {
					key := m.GetKeys()
					if key == "" {
						key = string(m.Body)
					}
					op := history.Op{Type: history.Recv, F: history.FRecv, Process: proc, Key: key, Topic: m.Topic,
						MsgID: m.MsgId, QueueOffset: m.QueueOffset, TimeMs: now}
					if m.Queue != nil {
						op.Broker, op.Queue = m.Queue.BrokerName, m.Queue.QueueId
					}
					w.rec.Add(op)
				}
				return consumer.ConsumeSuccess, nil
			})
		if err != nil {
			w.t.Fatalf("subscribe %s: %v", w.topic, err)
		}
		if err := c.Start(); err != nil {
			w.t.Fatalf("start push consumer: %v", err)
		}
		w.t.Cleanup(func() { _ = c.Shutdown() })
	}
}

// startProducers starts the producer goroutines; stopProducers ends them.
func (w *workload) startProducers() {
	w.stop = make(chan struct{})
	for i := 0; i < w.Producers; i++ {
		p, err := producer.NewDefaultProducer(
			producer.WithNsResolver(primitive.NewPassthroughResolver(w.namesrv)),
			producer.WithGroupName(processtest.Unique("chaos-pg")),
			producer.WithInstanceName(processtest.Unique("chaos-p")),
			producer.WithRetry(2),
			producer.WithQueueSelector(&groupSelector{}),
			producer.WithSendMsgTimeout(3*time.Second),
		)
		if err != nil {
			w.t.Fatalf("new producer: %v", err)
		}
		if err := p.Start(); err != nil {
			w.t.Fatalf("start producer: %v", err)
		}
		w.t.Cleanup(func() { _ = p.Shutdown() })
		rng := rand.New(rand.NewPCG(w.seed, uint64(i)))
		w.wg.Add(1)
		go w.produce(i, p, rng) // stopped by stopProducers
	}
}

// stopProducers ends the producers and waits for their last sends.
func (w *workload) stopProducers() {
	close(w.stop)
	w.wg.Wait()
}

// chaosGroupProperty names the broker group a message must go to (the
// timer's group, for its cancel record).
const chaosGroupProperty = "CHAOS_BROKER_GROUP"

// groupSelector is the producers' queue selector: round robin over every
// queue, a retry on another group than the last (as the client's
// default), or over the queues of the group a message names in
// chaosGroupProperty.
type groupSelector struct{ next atomic.Uint64 }

// Select implements producer.QueueSelector.
func (g *groupSelector) Select(m *primitive.Message, qs []*primitive.MessageQueue, last string) *primitive.MessageQueue {
	if len(qs) == 0 {
		return nil
	}
	keep := func(q *primitive.MessageQueue) bool { return last == "" || q.BrokerName != last } // a retry: another group, as the default
	if want := m.GetProperty(chaosGroupProperty); want != "" {
		keep = func(q *primitive.MessageQueue) bool { return q.BrokerName == want }
	}
	var of []*primitive.MessageQueue
	for _, q := range qs {
		if keep(q) {
			of = append(of, q)
		}
	}
	if len(of) > 0 {
		qs = of
	}
	return qs[g.next.Add(1)%uint64(len(qs))]
}

// chaosSender is the part of the Go client's producer the workload uses.
type chaosSender interface {
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
}

func (w *workload) produce(proc int, p chaosSender, rng *rand.Rand) {
	defer w.wg.Done()
	tick := time.NewTicker(time.Duration(float64(time.Second) / w.Rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		key := fmt.Sprintf("p%d-%d", proc, n)
		m := primitive.NewMessage(w.topic, []byte(key))
		m.WithKeys([]string{key})
		inv := history.Op{Type: history.Invoke, F: history.FSend, Process: proc, Key: key, Topic: w.topic}
		var due time.Time
		if rng.Float64() < w.TimerShare {
			maxDue := w.MaxDue
			if maxDue == 0 {
				maxDue = 20 * time.Second
			}
			span := max(maxDue-time.Second, time.Millisecond)
			due = time.Now().Add(time.Second + time.Duration(rng.Int64N(int64(span))))
			m.WithDelayTimestamp(due)
			inv.Timer, inv.DueMs = true, due.UnixMilli()
			w.mu.Lock()
			w.lastDue = max(w.lastDue, inv.DueMs)
			w.mu.Unlock()
		}
		w.rec.Add(inv)
		res := w.send(proc, key, p, m, history.FSend)
		// Cancel only timers due at least 3 s ahead: a confirmed cancel
		// then comes well before the due time (the checker's margin).
		if res != nil && inv.Timer && time.Until(due) > 3*time.Second && rng.Float64() < w.CancelShare {
			c := primitive.NewMessage(w.topic, []byte("cancel-"+key))
			c.WithDelayTimestamp(due)
			c.WithProperty("TIMER_DEL_UNIQKEY", w.topic+"+"+res.MsgID)
			if res.MessageQueue != nil { // a cancel works on the group holding the timer only
				c.WithProperty(chaosGroupProperty, res.MessageQueue.BrokerName)
			}
			w.rec.Add(history.Op{Type: history.Invoke, F: history.FCancel, Process: proc, Key: key, Topic: w.topic})
			w.send(proc, key, p, c, history.FCancel)
		}
	}
}

// send sends m once (with the client's retries) and records the outcome:
// only SEND_OK is ok; every error and every other status is info. The
// client retries after timeouts and connection errors, so even a refusal
// code on its last attempt does not prove that nothing was written.
func (w *workload) send(proc int, key string, p chaosSender, m *primitive.Message, f string) *primitive.SendResult {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, m)
	op := history.Op{F: f, Process: proc, Key: key, Topic: m.Topic, Code: -1}
	switch {
	case err != nil:
		op.Type, op.Err = history.Info, err.Error()
		if sm := codeRe.FindStringSubmatch(op.Err); sm != nil {
			op.Code, _ = strconv.Atoi(sm[1])
		}
	case res.Status == primitive.SendOK:
		op.Type, op.Code, op.MsgID = history.OK, 0, res.MsgID
		op.QueueOffset = res.QueueOffset
		if res.MessageQueue != nil {
			op.Broker, op.Queue = res.MessageQueue.BrokerName, res.MessageQueue.QueueId
		}
	default:
		op.Type, op.MsgID = history.Info, res.MsgID
		op.Code = map[primitive.SendStatus]int{primitive.SendFlushDiskTimeout: 10,
			primitive.SendFlushSlaveTimeout: 12, primitive.SendSlaveNotAvailable: 11}[res.Status]
		op.Err = fmt.Sprintf("send status %d", res.Status)
	}
	w.rec.Add(op)
	if op.Type != history.OK {
		return nil
	}
	return res
}

// firstOKAfter is the time of the first ok of a send invoked at or after
// at (Unix ms; 0: none yet): acknowledgements of sends already in flight
// at the fault do not count.
func firstOKAfter(ops []history.Op, at int64) int64 {
	invoked := map[string]int64{}
	for _, op := range ops {
		if op.F != history.FSend {
			continue
		}
		switch op.Type {
		case history.Invoke:
			invoked[op.Key] = op.TimeMs
		case history.OK:
			if t, ok := invoked[op.Key]; ok && t >= at {
				return op.TimeMs
			}
		}
	}
	return 0
}

// drained reports whether every ok send not cancelled has been received.
func drained(ops []history.Op) (missing int) {
	r := history.Check(ops, history.Options{})
	return len(r.Lost)
}
