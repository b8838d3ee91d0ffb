package main

// `wheelctl bench consume`: end-to-end throughput and latency. Producers
// stamp each body with its send time; a push consumer of the official Go
// client receives them and records arrival minus send time.

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
)

// warmSeq marks the warm-up message, which is not counted.
const warmSeq = math.MaxUint64

func newBenchConsumeCmd(g *globals) *cobra.Command {
	var o produceOpts
	var common benchCommon
	var drain time.Duration
	c := &cobra.Command{
		Use:   "consume [--size 256] [--producers 1] [--duration 5s | --count N] [--mode async]",
		Short: "End-to-end throughput and latency: producers and a push consumer at once",
		Long: `Start a push consumer (official Go client) on a new topic, then send for --duration (or
--count messages) and report, next to the producers' figures, how many messages arrived, at what
rate, and their end-to-end latency (arrival at the consumer minus the send call). Messages not
received within --drain after the last send count as errors. The --producers goroutines share one
client (--clients is ignored).`,
		Example: "  wheelctl bench consume --mode async --duration 10s\n  wheelctl bench consume --count 100000 --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd, 16); err != nil {
				return err
			}
			if o.simpleAcks != acksSequential && o.simpleAcks != acksConcurrent {
				return usageErr(fmt.Errorf("--acks %q: want %s or %s", o.simpleAcks, acksSequential, acksConcurrent))
			}
			if err := common.checkFlush(); err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(common.cpuprofile)
			if err != nil {
				return err
			}
			defer stopProfile()
			target, err := openBenchBroker(cmd, g, common.flush)
			if err != nil {
				return err
			}
			defer target.stop()
			rep, err := runConsumeBench(cmd.Context(), g, target, o, drain)
			if rep != nil {
				if perr := rep.print(g.stdout, common.json); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	o.addFlags(c)
	c.Flags().DurationVar(&drain, "drain", 30*time.Second, "how long to wait for deliveries after the last send")
	c.Flags().StringVar(&o.simpleAcks, "acks", acksSequential, "--protocol grpc: how each SimpleConsumer acks what one receive returned: "+
		acksSequential+" (one ack after the other, as the Go SDK's example) or "+acksConcurrent+" (all at once, as the Java SDK's ackAsync)")
	_ = c.RegisterFlagCompletionFunc("acks", fixedCompletion(acksSequential, acksConcurrent))
	common.addFlags(c)
	_ = c.Flags().Set("mode", "async")
	c.Flags().Lookup("mode").DefValue = "async"
	return c
}

// receiver counts what the consumer got.
type receiver struct {
	lat      latencies
	received atomic.Int64
	warm     chan struct{}
	warmOnce sync.Once
	last     atomic.Int64 // UnixNano of the last arrival
}

func (r *receiver) onMessages(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	now := time.Now()
	for _, m := range msgs {
		r.arrived(m.Body, now)
	}
	return consumer.ConsumeSuccess, nil
}

// arrived counts one stamped body that arrived at now (the warm-up one
// only opens warm).
func (r *receiver) arrived(body []byte, now time.Time) {
	if len(body) < 16 {
		return
	}
	if binary.BigEndian.Uint64(body[8:]) == warmSeq {
		r.warmOnce.Do(func() { close(r.warm) })
		return
	}
	r.lat.add(now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(body)))))
	r.received.Add(1)
	r.last.Store(now.UnixNano())
}

// runConsumeBench runs producers and a consumer against target.
func runConsumeBench(ctx context.Context, g *globals, target *benchTargetBroker, o produceOpts, drain time.Duration) (*benchReport, error) {
	rep := &benchReport{Kind: "consume", Broker: target.desc, Client: o.client, Mode: o.mode, Size: o.size,
		Producers: o.producers, Clients: 1, DurationS: o.duration.Seconds(), Count: o.count, Security: g.sec.describe()}
	if o.count > 0 {
		rep.DurationS = 0
	}
	if o.mode == "async" {
		rep.Window = o.window
	}
	topic := o.topic
	if topic == "" {
		topic = fmt.Sprintf("bench_consume_%d", time.Now().UnixNano())
	}
	o.topic = topic
	if o.grpcEndpoint == "" {
		o.grpcEndpoint = target.grpc
	}
	p, err := newProducer(o.client, producerOptions{Namesrv: target.namesrv, Group: "wheelctl_bench", Retries: 1, Security: &g.sec,
		GRPCEndpoint: o.grpcEndpoint, Topics: []string{topic}})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	warm := make([]byte, o.size)
	binary.BigEndian.PutUint64(warm[8:], warmSeq)
	if err := warmUp(ctx, p, &outMessage{Topic: topic, Body: warm}); err != nil { // creates the topic
		return nil, err
	}
	rcv := &receiver{warm: make(chan struct{})}
	group := fmt.Sprintf("wheelctl_bench_%d", time.Now().UnixNano())
	if o.protocol == "grpc" {
		stop, err := consumeSimple(ctx, o.grpcEndpoint, group, topic, &g.sec, o.simpleAcks == acksConcurrent, rcv)
		if err != nil {
			return nil, err
		}
		defer stop()
		rep.Client += " + v5 SimpleConsumer (" + o.simpleAcks + " acks)"
		return finishConsumeBench(ctx, g, rep, rcv, p, o, topic, drain)
	}
	secOpts, err := officialConsumerOptions(&g.sec)
	if err != nil {
		return nil, err
	}
	c, err := consumer.NewPushConsumer(append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver(admin.NameServers(target.namesrv))),
		consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("wheelctl-bench-%d", time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, secOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("new consumer: %w", err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, rcv.onMessages); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start consumer: %w", err)
	}
	defer func() { _ = c.Shutdown() }()
	return finishConsumeBench(ctx, g, rep, rcv, p, o, topic, drain)
}

// finishConsumeBench waits for the consumer's first (warm-up) message, runs
// the producers and waits up to drain for the consumer to get everything.
func finishConsumeBench(ctx context.Context, g *globals, rep *benchReport, rcv *receiver, p messageProducer, o produceOpts,
	topic string, drain time.Duration) (*benchReport, error) {
	select { // the consumer is assigned its queues and pulling
	case <-rcv.warm:
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("the consumer received nothing within 60 s of starting")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	stamped := &stampingProducer{messageProducer: p}
	workers := make([]messageProducer, o.producers) // --producers goroutines share one stamped client
	for i := range workers {
		workers[i] = stamped
	}
	sent, err := runWorkload(ctx, workers, "sending", o, &outMessage{Topic: topic, Body: make([]byte, o.size)}, g.stderr)
	if err != nil {
		return nil, err
	}
	start := stamped.start
	deadline := time.Now().Add(drain)
	for rcv.received.Load() < sent.Messages && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	got := rcv.received.Load()
	res := benchResult{Target: "consumer (end to end)", Messages: got, Errors: max(sent.Messages-got, 0),
		Latency: rcv.lat.summary()}
	if got > 0 {
		res.setRate(time.Unix(0, rcv.last.Load()).Sub(start), o.size)
	}
	sent.Target = "producers"
	rep.Results = []benchResult{sent, res}
	if got == 0 {
		return rep, fmt.Errorf("the consumer received none of %d messages", sent.Messages)
	}
	return rep, ctx.Err()
}

// stampingProducer writes the send time into the first 8 bytes and a
// sequence number into the next 8 of each body.
type stampingProducer struct {
	messageProducer
	seq   atomic.Uint64
	once  sync.Once
	start time.Time
}

func (s *stampingProducer) stamp(m *outMessage) *outMessage {
	s.once.Do(func() { s.start = time.Now() })
	body := make([]byte, len(m.Body))
	copy(body, m.Body)
	binary.BigEndian.PutUint64(body, uint64(time.Now().UnixNano()))
	binary.BigEndian.PutUint64(body[8:], s.seq.Add(1)-1)
	c := *m
	c.Body = body
	return &c
}

func (s *stampingProducer) SendSync(ctx context.Context, m *outMessage) (receipt, error) {
	return s.messageProducer.SendSync(ctx, s.stamp(m))
}

func (s *stampingProducer) SendAsync(ctx context.Context, m *outMessage, done func(receipt, error)) error {
	return s.messageProducer.SendAsync(ctx, s.stamp(m), done)
}

func (s *stampingProducer) SendOneway(ctx context.Context, m *outMessage) error {
	return s.messageProducer.SendOneway(ctx, s.stamp(m))
}
