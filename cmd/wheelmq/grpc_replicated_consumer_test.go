package main

// The v5 SimpleConsumer of TestGRPCReplicatedGroupFailover: it receives
// and acks through the failover, and the test checks that every
// acknowledged send was received.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

// failoverConsumer receives and acks in a goroutine of its own until
// stopped, counting each body it received.
type failoverConsumer struct {
	c    rmq.SimpleConsumer
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	got      map[string]int // body -> deliveries
	ackFails int            // acks that failed (the message comes again)
	lastAt   time.Time      // the last delivery
	lastErr  error          // the last failed receive (other than no message)
	trail    []string       // the last receives: when, how many, error
}

// note adds one receive's outcome to fc's trail (the last 40).
func (fc *failoverConsumer) note(n int, err error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.trail = append(fc.trail, fmt.Sprintf("%s %d %v", time.Now().Format("15:04:05.000"), n, err))
	if len(fc.trail) > 40 {
		fc.trail = fc.trail[1:]
	}
}

// consumerInvisible is the invisibility of the failover consumer's
// deliveries: the least the broker takes, so that a delivery whose ack
// was lost with the master comes again soon.
const consumerInvisible = 10 * time.Second

// newFailoverConsumer makes a SimpleConsumer of group on topic at
// endpoint (long polls of 2 s); run starts its receive loop once the
// caller started it.
func newFailoverConsumer(t *testing.T, endpoint, group, topic string) *failoverConsumer {
	t.Helper()
	c, err := rmq.NewSimpleConsumer(&rmq.Config{Endpoint: endpoint, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmq.WithSimpleAwaitDuration(2*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatal(err)
	}
	return &failoverConsumer{c: c, stop: make(chan struct{}), done: make(chan struct{}), got: map[string]int{}}
}

// run starts fc's receive loop; the test's cleanup stops it and the
// consumer.
func (fc *failoverConsumer) run(t *testing.T) {
	go fc.loop() // ends when stop is closed; Cleanup waits for done
	t.Cleanup(func() { fc.halt(); _ = fc.c.GracefulStop() })
}

// loop receives and acks until stop is closed.
func (fc *failoverConsumer) loop() {
	defer close(fc.done)
	for {
		select {
		case <-fc.stop:
			return
		default:
		}
		// One message a receive, so that a batch in hand at the kill does
		// not hold acks that fail one by one. The deadline is past the long
		// poll (2 s) and the SDK's request timeout (3 s).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		msgs, err := fc.c.Receive(ctx, 1, consumerInvisible)
		fc.note(len(msgs), err)
		if err != nil {
			cancel()
			if !isV5NotFound(err) {
				fc.mu.Lock()
				fc.lastErr = err
				fc.mu.Unlock()
				// The master died under the call, or this member does not
				// know the new one yet: try again shortly.
				select {
				case <-fc.stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
			continue
		}
		now := time.Now()
		for _, m := range msgs {
			fc.mu.Lock()
			fc.got[string(m.GetBody())]++
			fc.lastAt = now
			fc.mu.Unlock()
			if err := fc.c.Ack(ctx, m); err != nil {
				fc.mu.Lock()
				fc.ackFails++
				fc.mu.Unlock()
			}
		}
		cancel()
	}
}

// halt stops the receive loop and waits for it (idempotent).
func (fc *failoverConsumer) halt() {
	select {
	case <-fc.stop:
	default:
		close(fc.stop)
	}
	<-fc.done
}

// missing is how many of bodies fc has not received yet, and its last
// receive error.
func (fc *failoverConsumer) missing(bodies []string) (int, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	n := 0
	for _, b := range bodies {
		if fc.got[b] == 0 {
			n++
		}
	}
	return n, fc.lastErr
}

// waitReceived waits until fc received every one of bodies, or fails the
// test at deadline.
func (fc *failoverConsumer) waitReceived(t *testing.T, bodies []string, deadline time.Time, what string) {
	t.Helper()
	for {
		n, err := fc.missing(bodies)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			fc.mu.Lock()
			trail := strings.Join(fc.trail, "\n")
			fc.mu.Unlock()
			t.Fatalf("%s: %d of %d acknowledged messages not received by the SimpleConsumer (last receive error: %v); the last receives:\n%s",
				what, n, len(bodies), err, trail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stats is what fc received: distinct bodies, deliveries beyond the first
// (duplicates), failed acks, and the last delivery's time.
func (fc *failoverConsumer) stats() (distinct, dups, ackFails int, last time.Time) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for _, n := range fc.got {
		distinct++
		dups += n - 1
	}
	return distinct, dups, fc.ackFails, fc.lastAt
}
