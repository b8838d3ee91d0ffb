package main

// The consuming side of the RocketMQ 5 SDK in the benchmarks: a pool of
// SimpleConsumers (golang/v5) that receive and ack (bench consume
// --protocol grpc), and `wheelctl bench redelivery`, which measures how long
// after its invisibility deadline an un-acked message is offered again.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

// simpleConsumer is what the benchmarks use of the SDK's SimpleConsumer.
type simpleConsumer interface {
	Receive(ctx context.Context, maxMessageNum int32, invisibleDuration time.Duration) ([]*rmq.MessageView, error)
	Ack(ctx context.Context, messageView *rmq.MessageView) error
	GracefulStop() error
}

// startSimpleConsumer starts a v5 SimpleConsumer of group on topic (every
// tag) at endpoint, signed and over TLS as sec says; await is its long
// polling time.
func startSimpleConsumer(endpoint, group, topic string, await time.Duration, sec *security) (simpleConsumer, error) {
	if endpoint == "" {
		return nil, usageErr(errGRPCEndpoint)
	}
	useTLS, err := sec.officialTLS()
	if err != nil {
		return nil, err
	}
	quietGRPCClientLogs()
	rmq.EnableSsl = useTLS
	cfg := &rmq.Config{Endpoint: endpoint, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}}
	if c := sec.officialCredentials(); !c.IsEmpty() {
		cfg.Credentials = &credentials.SessionCredentials{AccessKey: c.AccessKey, AccessSecret: c.SecretKey}
	}
	c, err := rmq.NewSimpleConsumer(cfg, rmq.WithSimpleAwaitDuration(await),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		return nil, fmt.Errorf("new v5 simple consumer: %w", err)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start v5 simple consumer at %s: %w", endpoint, err)
	}
	return c, nil
}

// isNoMessage reports whether err is the SDK's "nothing to receive"
// (MESSAGE_NOT_FOUND, 40401), which a long poll that found nothing ends with.
func isNoMessage(err error) bool {
	var st *rmq.ErrRpcStatus
	return errors.As(err, &st) && st.Code == 40401
}

// How bench consume's SimpleConsumers ack the messages of one receive.
const (
	acksSequential = "sequential" // one Ack after the other
	acksConcurrent = "concurrent" // every Ack at once, then the next receive
)

// simpleReceivers runs n goroutines that receive batches from c and ack each
// message (concurrent: all of a batch at once, each in its own goroutine,
// waited for before the next receive), handing every message to each
// (after its ack) until ctx ends. It returns once all goroutines stopped.
func simpleReceivers(ctx context.Context, c simpleConsumer, n int, invisible time.Duration, concurrent bool, each func(*rmq.MessageView, time.Time)) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				msgs, err := c.Receive(ctx, 32, invisible)
				now := time.Now()
				if err != nil {
					if !isNoMessage(err) && ctx.Err() == nil {
						time.Sleep(20 * time.Millisecond) // a failed receive: do not spin
					}
					continue
				}
				if !concurrent {
					for _, m := range msgs {
						_ = c.Ack(ctx, m)
						each(m, now)
					}
					continue
				}
				var acks sync.WaitGroup
				for _, m := range msgs {
					acks.Add(1)
					go func() {
						defer acks.Done()
						_ = c.Ack(ctx, m)
						each(m, now)
					}()
				}
				acks.Wait()
			}
		}()
	}
	wg.Wait()
}

// consumeSimple is bench consume's consumer with --protocol grpc: v5
// SimpleConsumers instead of the official remoting push consumer, counted
// by the same receiver.
func consumeSimple(ctx context.Context, endpoint, group, topic string, sec *security, concurrentAcks bool, rcv *receiver) (stop func(), err error) {
	c, err := startSimpleConsumer(endpoint, group, topic, 5*time.Second, sec)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		simpleReceivers(rctx, c, 4, 30*time.Second, concurrentAcks, func(m *rmq.MessageView, at time.Time) {
			rcv.arrived(m.GetBody(), at)
		})
	}()
	return func() {
		cancel()
		<-done
		_ = c.GracefulStop()
	}, nil
}

// popHandleTimes reads the pop time and invisible time (ms) out of a receipt
// handle in RocketMQ's extraInfo form ("startOffset popTime invisibleTime
// reviveQid topicType brokerName queueId offset"), which wheelmq's broker
// hands out. ok is false for any other form.
func popHandleTimes(handle string) (popMs, invisibleMs int64, ok bool) {
	f := strings.Fields(handle)
	if len(f) < 3 {
		return 0, 0, false
	}
	p, err1 := strconv.ParseInt(f[1], 10, 64)
	i, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || p <= 0 || i < 0 {
		return 0, 0, false
	}
	return p, i, true
}
