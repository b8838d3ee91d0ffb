package main

// TestSIGKILLKeepsLiteMessages: lite messages (RocketMQ 5.5 lite topics,
// docs/lite.md) sent with the Go v5 SDK survive a SIGKILL: the broker is
// killed and started again on the same data directory; the messages of a
// lite topic nobody consumed are all delivered afterwards, in order, to a
// LitePushConsumer; those of a lite topic consumed and acked before the
// kill (its acks in the lite log) are not delivered again.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/litelog"
)

// liteDeliveries logs a LitePushConsumer's deliveries: "<lite>/<body>".
type liteDeliveries struct {
	mu  sync.Mutex
	got []string
}

func (l *liteDeliveries) add(s string) { l.mu.Lock(); l.got = append(l.got, s); l.mu.Unlock() }

func (l *liteDeliveries) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// v5LiteConsumer starts a LitePushConsumer at endpoint subscribed to lite.
func v5LiteConsumer(t *testing.T, endpoint, group, topic, lite string, log *liteDeliveries) rmq.LitePushConsumer {
	t.Helper()
	v5SDKSetup()
	c, err := rmq.NewLitePushConsumer(&rmq.Config{Endpoint: endpoint, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmq.NewLitePushConsumerConfig(topic, 10*time.Second),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
			log.add(mv.GetLiteTopic() + "/" + string(mv.GetBody()))
			return rmq.SUCCESS
		}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start the LitePushConsumer at %s: %v", endpoint, err)
	}
	if err := c.SubscribeLite(lite); err != nil {
		t.Fatalf("subscribe %s: %v", lite, err)
	}
	return c
}

// v5SDKSetup is v5SimpleConsumer's one-time SDK setup.
func v5SDKSetup() {
	v5SDKOnce.Do(func() {
		_ = setV5SDKDefaults()
	})
}

func TestSIGKILLKeepsLiteMessages(t *testing.T) {
	t.Parallel() // waits more than it computes
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const n = 20
	bin := buildBinary(t)
	dir := t.TempDir()
	p1 := startProc(t, bin, dir)
	topic := processtest.Unique("litecrash")
	group := topic + "-cg"
	if r := processtest.Invoke(t, p1.broker, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "attributes": "+message.type=LITE",
	}, nil)); r.Code != remoting.Success {
		t.Fatalf("create LITE topic: %d %s", r.Code, r.Remark)
	}
	processtest.WaitRoute(t, p1.namesrv, topic)
	v5SDKSetup()
	prod, err := rmq.NewProducer(&rmq.Config{Endpoint: p1.grpc, Credentials: &credentials.SessionCredentials{}}, rmq.WithTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatalf("start producer: %v", err)
	}
	var wantK, wantJ []string
	for i := range n {
		for _, lite := range []string{"k", "j"} {
			body := fmt.Sprintf("%s-%d", lite, i)
			m := &rmq.Message{Topic: topic, Body: []byte(body)}
			m.SetLiteTopic(lite)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := prod.Send(ctx, m); err != nil {
				cancel()
				t.Fatalf("send %s: %v", body, err)
			}
			cancel()
			if lite == "k" {
				wantK = append(wantK, "k/"+body)
			} else {
				wantJ = append(wantJ, "j/"+body)
			}
		}
	}
	_ = prod.GracefulStop()

	// j is consumed before the kill; the test waits for its acks in the
	// lite log (the log is not fsynced: SIGKILL keeps the page cache).
	var before liteDeliveries
	cj := v5LiteConsumer(t, p1.grpc, group, topic, "j", &before)
	liteDir := filepath.Join(dir, "lite")
	waitUntil(t, 30*time.Second, "j's 20 messages consumed and their acks logged", func() bool {
		acks := 0
		_ = litelog.Read(liteDir, func(r *litelog.Record) {
			if r.Kind == litelog.KindAck && r.Lite == "j" {
				acks++
			}
		})
		return acks == n
	})
	if got := before.list(); !slices.Equal(got, wantJ) {
		t.Fatalf("before the kill: %v, want %v", got, wantJ)
	}
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p1.wait(t, 10*time.Second)
	go func() { _ = cj.GracefulStop() }() // its broker is gone: it waits out its timeouts, in the background

	p2 := startProc(t, bin, dir)
	var after liteDeliveries
	ck := v5LiteConsumer(t, p2.grpc, group, topic, "k", &after)
	defer func() { _ = ck.GracefulStop() }()
	if err := ck.SubscribeLite("j"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "k's 20 messages after the restart", func() bool { return len(after.list()) >= n })
	time.Sleep(time.Second) // watching for a j message that must not come
	if got := after.list(); !slices.Equal(got, wantK) {
		t.Fatalf("after the restart: %v, want exactly %v", got, wantK)
	}
}

// waitUntil polls cond until it holds or d passes (a test failure).
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
