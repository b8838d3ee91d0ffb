package main

// The publishers: wheelmq's native producer, the official RocketMQ Go
// client against wheelmq, and nats.go's JetStream API against nats-server.

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	goproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// publisher is one client of one server.
type publisher interface {
	// Sync publishes body and waits for the server's acknowledgement.
	Sync(ctx context.Context, body []byte) error
	// StartAsync opens an async session whose completions all call done.
	StartAsync(done func(error)) (asyncSession, error)
	Close()
}

// asyncSession publishes without waiting; every publish completes once
// through the done of StartAsync.
type asyncSession interface {
	// Publish sends body; a non-zero at makes it a timer (wheelmq) or
	// scheduled (NATS) message due then.
	Publish(body []byte, at time.Time) error
	// Close waits for the publishes under way (bounded).
	Close()
}

// benchTopic is the wheelmq topic, made with 8 queues before the runs.
const benchTopic = "bench_nats"

var instances atomic.Int64

// createTopic makes benchTopic with 8 queues on the broker and waits until
// the name server routes it.
func createTopic(ctx context.Context, broker, namesrv string) error {
	invoke := func(addr string, req *remoting.Command) (*remoting.Command, error) {
		c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		defer c.Close()
		return c.Invoke(ctx, req)
	}
	resp, err := invoke(broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": benchTopic, "readQueueNums": "8", "writeQueueNums": "8", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != remoting.Success {
		return fmt.Errorf("create topic %s: %v %v", benchTopic, err, resp)
	}
	for {
		resp, err := invoke(namesrv, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": benchTopic}, nil))
		if err == nil && resp.Code == remoting.Success {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("route of %s: %w", benchTopic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// nativePublisher is wheelmq's native producer (cmd/internal/client/producer).
type nativePublisher struct{ p *producer.Producer }

func newNative(namesrv string) (*nativePublisher, error) {
	p, err := producer.New(producer.WithNameServers(namesrv), producer.WithGroup("bench_nats_native"),
		producer.WithInstanceName("bench-native-"+strconv.FormatInt(instances.Add(1), 10)))
	if err != nil {
		return nil, fmt.Errorf("native producer: %w", err)
	}
	return &nativePublisher{p: p}, nil
}

func (n *nativePublisher) Sync(ctx context.Context, body []byte) error {
	_, err := n.p.Send(ctx, producer.NewMessage(benchTopic, body))
	return err
}

func (n *nativePublisher) StartAsync(done func(error)) (asyncSession, error) {
	return &nativeSession{p: n.p, done: func(_ *producer.SendResult, err error) { done(err) }}, nil
}

func (n *nativePublisher) Close() { _ = n.p.Close() }

type nativeSession struct {
	p    *producer.Producer
	done func(*producer.SendResult, error)
}

func (s *nativeSession) Publish(body []byte, at time.Time) error {
	m := producer.NewMessage(benchTopic, body)
	if !at.IsZero() {
		m.WithDeliverAt(at)
	}
	return s.p.SendAsync(context.Background(), m, s.done)
}

func (s *nativeSession) Close() {}

// officialPublisher is the official RocketMQ Go client.
type officialPublisher struct {
	p interface {
		Shutdown() error
		SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
		SendAsync(ctx context.Context, f func(context.Context, *primitive.SendResult, error), mq ...*primitive.Message) error
	}
}

func newOfficial(namesrv string) (*officialPublisher, error) {
	rlog.SetLogLevel("error")
	p, err := goproducer.NewDefaultProducer(
		goproducer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		goproducer.WithGroupName("bench_nats_official"),
		goproducer.WithInstanceName("bench-official-"+strconv.FormatInt(instances.Add(1), 10)),
		goproducer.WithRetry(2))
	if err != nil {
		return nil, fmt.Errorf("official producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start official producer: %w", err)
	}
	return &officialPublisher{p: p}, nil
}

func (o *officialPublisher) Sync(ctx context.Context, body []byte) error {
	r, err := o.p.SendSync(ctx, primitive.NewMessage(benchTopic, body))
	if err == nil && r.Status != primitive.SendOK {
		err = fmt.Errorf("send status %d", r.Status)
	}
	return err
}

func (o *officialPublisher) StartAsync(done func(error)) (asyncSession, error) {
	return &officialSession{o: o, done: func(_ context.Context, _ *primitive.SendResult, err error) { done(err) }}, nil
}

func (o *officialPublisher) Close() { _ = o.p.Shutdown() }

type officialSession struct {
	o    *officialPublisher
	done func(context.Context, *primitive.SendResult, error)
}

func (s *officialSession) Publish(body []byte, at time.Time) error {
	m := primitive.NewMessage(benchTopic, body)
	if !at.IsZero() {
		m.WithDelayTimestamp(at)
	}
	return s.o.p.SendAsync(context.Background(), s.done, m)
}

func (s *officialSession) Close() {}

// natsPublisher is nats.go's JetStream client on stream BENCH (subjects
// bench.> and sched.>, file storage, message schedules allowed).
type natsPublisher struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	window int
	sched  atomic.Int64 // schedule subjects used: one schedule per subject
}

func newNATS(ctx context.Context, url string, window int) (*natsPublisher, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, fmt.Errorf("connect nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: "BENCH", Subjects: []string{"bench.>", "sched.>"}, Storage: jetstream.FileStorage,
		AllowMsgSchedules: true,
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("create stream: %w", err)
	}
	return &natsPublisher{nc: nc, js: js, window: window}, nil
}

func (n *natsPublisher) Sync(ctx context.Context, body []byte) error {
	_, err := n.js.Publish(ctx, "bench.sync", body)
	return err
}

// StartAsync opens a JetStream context whose async ack and error handlers
// report every completion; the runner's window bounds the publishes in
// flight (the context's own bound is set above it).
func (n *natsPublisher) StartAsync(done func(error)) (asyncSession, error) {
	js, err := jetstream.New(n.nc,
		jetstream.WithPublishAsyncMaxPending(4*n.window),
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) { done(nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) { done(err) }))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &natsSession{js: js, n: n}, nil
}

func (n *natsPublisher) Close() { n.nc.Close() }

type natsSession struct {
	js jetstream.JetStream
	n  *natsPublisher
}

// Publish sends body to bench.async, or, with at, as a one-time schedule
// (Nats-Schedule: @at ...) on its own subject sched.N targeting bench.due:
// NATS keeps one schedule per subject.
func (s *natsSession) Publish(body []byte, at time.Time) error {
	if at.IsZero() {
		_, err := s.js.PublishAsync("bench.async", body)
		return err
	}
	subj := "sched." + strconv.FormatInt(s.n.sched.Add(1), 10)
	_, err := s.js.PublishAsync(subj, body, jetstream.WithScheduleAt(at), jetstream.WithScheduleTarget("bench.due"))
	return err
}

func (s *natsSession) Close() {
	select {
	case <-s.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
	}
}
