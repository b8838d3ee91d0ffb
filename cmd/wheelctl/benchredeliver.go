package main

// `wheelctl bench redelivery`: how precisely the broker offers an un-acked
// message again once its invisibility expires. A producer sends --count
// stamped messages; v5 SimpleConsumers receive each once and let it lapse
// (no ack), then receive it again and ack it. The lateness of a redelivery
// is its arrival minus the deadline the broker set, popTime + invisibleTime,
// both read from the first delivery's receipt handle (broker clock; client
// and broker share the machine's clock here).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/spf13/cobra"
)

// redeliveryOpts shape a redelivery run.
type redeliveryOpts struct {
	count        int
	invisible    time.Duration
	receivers    int
	grpcEndpoint string
	client       string
	drain        time.Duration
}

func newBenchRedeliveryCmd(g *globals) *cobra.Command {
	var o redeliveryOpts
	var common benchCommon
	c := &cobra.Command{
		Use:   "redelivery [--count 1000] [--invisible 10s] [--grpc-endpoint HOST:PORT]",
		Short: "Redelivery precision: how late an un-acked message is offered again after its invisibility deadline",
		Long: `Send --count messages, receive each once through RocketMQ 5 SimpleConsumers (gRPC) with
--invisible as its invisible time and do not ack it, then receive it again and ack it. Reports the
lateness of each redelivery against the deadline the broker set (popTime + invisibleTime from the
receipt handle): p50/p90/p99/max, and how many came back early (must be 0). RocketMQ's own
redelivery goes through its revive service: deadline + 1-2 s. Against the in-process broker unless
--namesrv and --grpc-endpoint name another.`,
		Example: "  wheelctl bench redelivery --count 2000 --invisible 10s --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.count < 1 || o.receivers < 1 || o.invisible <= 0 {
				return usagef("--count and --receivers must be at least 1, --invisible positive")
			}
			if err := common.checkFlush(); err != nil {
				return err
			}
			target, err := openBenchBroker(cmd, g, common.flush)
			if err != nil {
				return err
			}
			defer target.stop()
			if o.grpcEndpoint == "" {
				o.grpcEndpoint = target.grpc
			}
			rep, err := runRedeliveryBench(cmd.Context(), g, target, o)
			if rep != nil {
				if perr := rep.print(g.stdout, common.json); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	f := c.Flags()
	f.IntVar(&o.count, "count", 1000, "messages to send, let lapse once and receive again")
	f.DurationVar(&o.invisible, "invisible", 10*time.Second, "invisible time of the first delivery")
	f.IntVar(&o.receivers, "receivers", 4, "goroutines receiving at once (long polls in flight)")
	f.StringVar(&o.grpcEndpoint, "grpc-endpoint", "", "the broker's gRPC endpoint host:port (default: the in-process broker's)")
	f.StringVar(&o.client, "client", "native", "producer implementation: "+clientNames())
	f.DurationVar(&o.drain, "drain", 30*time.Second, "how long after the last deadline to wait for redeliveries")
	common.addFlags(c)
	return c
}

// redeliveryTracker pairs each message's first delivery with its second.
type redeliveryTracker struct {
	mu        sync.Mutex
	deadline  map[string]time.Time // message id -> popTime + invisibleTime of its first delivery
	done      map[string]bool
	late      latencies
	early     atomic.Int64
	badHandle atomic.Int64
	redeliv   atomic.Int64
	last      atomic.Int64 // UnixNano of the latest first-delivery deadline
}

// seen handles one received message; it returns whether to ack it (only
// redeliveries are acked).
func (t *redeliveryTracker) seen(m *rmq.MessageView, at time.Time) bool {
	id := m.GetMessageId()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done[id] {
		return true // a third delivery (its ack was lost): ack again
	}
	dl, again := t.deadline[id]
	if !again {
		pop, inv, ok := popHandleTimes(m.GetReceiptHandle())
		if !ok {
			t.badHandle.Add(1)
			return true
		}
		dl = time.UnixMilli(pop + inv)
		t.deadline[id] = dl
		if dl.UnixNano() > t.last.Load() {
			t.last.Store(dl.UnixNano())
		}
		return false
	}
	t.done[id] = true
	t.redeliv.Add(1)
	if d := at.Sub(dl); d < 0 {
		t.early.Add(1)
	} else {
		t.late.add(d)
	}
	return true
}

// runRedeliveryBench sends, lets the first deliveries lapse and measures the
// second ones.
func runRedeliveryBench(ctx context.Context, g *globals, target *benchTargetBroker, o redeliveryOpts) (*benchReport, error) {
	topic := fmt.Sprintf("bench_redelivery_%d", time.Now().UnixNano())
	group := topic + "_cg"
	rep := &benchReport{Kind: "redelivery", Broker: target.desc, Client: o.client + " + v5 SimpleConsumer", Mode: "sync",
		Size: 16, Producers: 1, Clients: 1, Count: int64(o.count), Security: g.sec.describe()}
	c, err := startSimpleConsumer(o.grpcEndpoint, group, topic, 5*time.Second, &g.sec)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.GracefulStop() }()
	p, err := newProducer(o.client, producerOptions{Namesrv: target.namesrv, Group: "wheelctl_bench", Retries: 1, Security: &g.sec,
		GRPCEndpoint: o.grpcEndpoint, Topics: []string{topic}})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	for i := range o.count {
		if _, err := p.SendSync(ctx, &outMessage{Topic: topic, Body: fmt.Appendf(nil, "redelivery-%08d", i)}); err != nil {
			return nil, fmt.Errorf("send %d: %w", i, err)
		}
	}
	tr := &redeliveryTracker{deadline: map[string]time.Time{}, done: map[string]bool{}}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range o.receivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				msgs, err := c.Receive(rctx, 32, o.invisible)
				now := time.Now()
				if err != nil {
					if !isNoMessage(err) && rctx.Err() == nil {
						time.Sleep(20 * time.Millisecond)
					}
					continue
				}
				for _, m := range msgs {
					if tr.seen(m, now) {
						_ = c.Ack(rctx, m)
					}
				}
			}
		}()
	}
	start := time.Now()
	limit := start.Add(o.invisible + o.drain + time.Duration(o.count)*time.Millisecond)
	for tr.redeliv.Load()+tr.badHandle.Load() < int64(o.count) && time.Now().Before(limit) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	got := tr.redeliv.Load()
	res := benchResult{Target: "redelivery after the invisibility deadline", Messages: got,
		Errors: int64(o.count) - got, Latency: tr.late.summary()}
	res.setRate(time.Since(start), rep.Size)
	if n := tr.early.Load(); n > 0 {
		res.FirstError = fmt.Sprintf("%d redelivered before their deadline", n)
	}
	if n := tr.badHandle.Load(); n > 0 {
		res.FirstError = fmt.Sprintf("%d receipt handles without popTime/invisibleTime", n)
	}
	rep.Results = []benchResult{res}
	switch {
	case got == 0:
		return rep, fmt.Errorf("none of %d messages was redelivered", o.count)
	case tr.early.Load() > 0:
		return rep, fmt.Errorf("%d messages were redelivered before their invisibility deadline", tr.early.Load())
	}
	return rep, ctx.Err()
}
