package main

// TestSIGKILLKeepsPopState: RocketMQ 5 SimpleConsumers (golang/v5 over the
// gRPC endpoint) receive a topic; half of what they received is acked, the
// rest is left in flight; the broker is SIGKILLed and started again on the
// same data directory. Afterwards no acked message is delivered again,
// every un-acked one is (none lost), and none of those in flight before the
// kill comes back before its invisibility deadline. Then, all acked, a
// graceful restart delivers nothing.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// v5SDKOnce points the v5 SDK's log files at a temp dir (it writes under
// $HOME otherwise) and turns its TLS default off (the endpoint serves both).
var v5SDKOnce sync.Once

func v5SimpleConsumer(t *testing.T, endpoint, group, topic string) rmq.SimpleConsumer {
	t.Helper()
	v5SDKOnce.Do(func() { _ = setV5SDKDefaults() })
	c, err := rmq.NewSimpleConsumer(&rmq.Config{Endpoint: endpoint, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmq.WithSimpleAwaitDuration(3*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start the v5 SimpleConsumer at %s: %v", endpoint, err)
	}
	return c
}

// setV5SDKDefaults points the v5 SDK's logs at a temp dir, at error
// level, and turns its TLS default off.
func setV5SDKDefaults() error {
	_ = os.Setenv(rmq.CLIENT_LOG_ROOT, os.TempDir()+"/wheelmq-test-rocketmq-v5")
	_ = os.Setenv(rmq.CLIENT_LOG_LEVEL, "error")
	rmq.ResetLogger()
	rmq.EnableSsl = false
	return nil
}

func TestSIGKILLKeepsPopState(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const n = 60
	const invisible = 10 * time.Second
	bin := buildBinary(t)
	dir := t.TempDir()
	p1 := startProc(t, bin, dir, "--flush", "sync")
	topic := processtest.Unique("popcrash")
	group := topic + "-cg"
	prod := processtest.Producer(t, p1.namesrv)
	for i := range n {
		res, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("pop-%d", i))))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
	}
	_ = prod.Shutdown()

	c1 := v5SimpleConsumer(t, p1.grpc, group, topic)
	acked := map[string]bool{}
	inFlight := map[string]time.Time{} // body -> popTime + invisibleTime
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for len(acked)+len(inFlight) < n && ctx.Err() == nil {
		msgs, err := c1.Receive(ctx, 16, invisible)
		if err != nil {
			if !isV5NotFound(err) {
				t.Logf("receive: %v", err)
			}
			continue
		}
		for _, m := range msgs {
			body := string(m.GetBody())
			if acked[body] {
				t.Fatalf("%s delivered again after its ack, before the kill", body)
			}
			if len(acked) < n/2 {
				if err := c1.Ack(ctx, m); err != nil {
					t.Fatalf("ack %s: %v", body, err)
				}
				acked[body] = true
				continue
			}
			inFlight[body] = handleDeadline(t, m.GetReceiptHandle())
		}
	}
	if len(acked)+len(inFlight) != n {
		t.Fatalf("before the kill: %d acked + %d in flight of %d", len(acked), len(inFlight), n)
	}
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p1.wait(t, 10*time.Second)
	_ = c1.GracefulStop()

	p2 := startProc(t, bin, dir, "--flush", "sync")
	c2 := v5SimpleConsumer(t, p2.grpc, group, topic)
	stop2 := sync.OnceFunc(func() { _ = c2.GracefulStop() })
	defer stop2()
	got := map[string]bool{}
	var lastPop2 time.Time
	ctx2, cancel2 := context.WithTimeout(context.Background(), invisible+30*time.Second)
	defer cancel2()
	for len(got) < len(inFlight) && ctx2.Err() == nil {
		msgs, err := c2.Receive(ctx2, 16, invisible)
		if err != nil {
			continue
		}
		now := time.Now()
		lastPop2 = now
		for _, m := range msgs {
			body := string(m.GetBody())
			switch {
			case acked[body]:
				t.Errorf("%s was acked before the kill and delivered again after it", body)
			case inFlight[body].IsZero():
				t.Errorf("unexpected message %q", body)
			case now.Before(inFlight[body]):
				t.Errorf("%s came back %v before its invisibility deadline", body, inFlight[body].Sub(now))
			}
			if m.GetDeliveryAttempt() < 2 {
				t.Errorf("%s: delivery attempt %d after a lapsed delivery, want >= 2", body, m.GetDeliveryAttempt())
			}
			got[body] = true
			if err := c2.Ack(ctx2, m); err != nil {
				t.Errorf("ack %s after the restart: %v", body, err)
			}
		}
	}
	for body := range inFlight {
		if !got[body] {
			t.Errorf("%s was never acked and never delivered again after the SIGKILL (lost)", body)
		}
	}
	t.Logf("%d acked before the kill, %d in flight at the kill, %d redelivered after the restart", len(acked), len(inFlight), len(got))

	// A graceful restart with everything acked: nothing comes again, also
	// past the deadlines of the deliveries acked after the SIGKILL.
	stop2()
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p2.wait(t, 30*time.Second)
	p3 := startProc(t, bin, dir, "--flush", "sync")
	c3 := v5SimpleConsumer(t, p3.grpc, group, topic)
	defer func() { _ = c3.GracefulStop() }()
	ctx3, cancel3 := context.WithDeadline(context.Background(), lastPop2.Add(invisible+time.Second))
	defer cancel3()
	for ctx3.Err() == nil {
		msgs, _ := c3.Receive(ctx3, 16, invisible)
		for _, m := range msgs {
			t.Errorf("%s delivered after a graceful restart with every message acked", m.GetBody())
		}
	}
}

// handleDeadline is popTime + invisibleTime of a receipt handle in
// RocketMQ's extraInfo form ("startOffset popTime invisibleTime ...").
func handleDeadline(t *testing.T, handle string) time.Time {
	t.Helper()
	var so, pop, inv int64
	if _, err := fmt.Sscanf(handle, "%d %d %d", &so, &pop, &inv); err != nil {
		t.Fatalf("receipt handle %q: %v", handle, err)
	}
	return time.UnixMilli(pop + inv)
}

// isV5NotFound reports the SDK's "no new message" (MESSAGE_NOT_FOUND).
func isV5NotFound(err error) bool {
	var st *rmq.ErrRpcStatus
	return errors.As(err, &st) && st.Code == 40401
}
