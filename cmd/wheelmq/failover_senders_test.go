package main

// The three clients of the failover-window measurement (failover_window_test.go),
// each sending one message every ~10 ms and recording when each send ended
// and how.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	goproducer "github.com/apache/rocketmq-client-go/v2/producer"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// sendEvent is one send of a failover sender: its body, when it ended,
// how long it took, and its error (nil: acknowledged).
type sendEvent struct {
	body string
	at   time.Time
	took time.Duration
	err  error
}

// failoverSender is one client of the measurement: send sends one body
// and answers whether it was acknowledged.
type failoverSender struct {
	name   string
	send   func(ctx context.Context, body string) error
	mu     sync.Mutex
	events []sendEvent // appended by the sender's goroutine under mu
}

// officialSender is the official remoting Go client as an application
// starts it: the three name servers, its default retries (2) and send
// timeout (3 s).
func officialSender(t *testing.T, nsAddrs []string, topic string) *failoverSender {
	t.Helper()
	processtest.QuietClient()
	p, err := rocketmq.NewProducer(goproducer.WithNsResolver(primitive.NewPassthroughResolver(nsAddrs)),
		goproducer.WithGroupName(processtest.Unique("pg")), goproducer.WithInstanceName(processtest.Unique("official")))
	if err != nil {
		t.Fatalf("new official producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start official producer: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return &failoverSender{name: "official Go remoting client", send: func(ctx context.Context, body string) error {
		r, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		if err == nil && r.Status != primitive.SendOK {
			err = fmt.Errorf("send status %d", r.Status)
		}
		return err
	}}
}

// nativeSender is wheelmq's native producer (cmd/internal/client/producer)
// with its defaults.
func nativeSender(t *testing.T, nsAddrs []string, topic string) *failoverSender {
	t.Helper()
	p, err := producer.New(producer.WithNameServers(nsAddrs...), producer.WithInstanceName(processtest.Unique("native")))
	if err != nil {
		t.Fatalf("new native producer: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return &failoverSender{name: "native producer", send: func(ctx context.Context, body string) error {
		_, err := p.Send(ctx, producer.NewMessage(topic, []byte(body)))
		return err
	}}
}

// v5Sender is the Go v5 SDK given endpoint (a replica's), with its
// defaults (3 attempts).
func v5Sender(t *testing.T, endpoint, topic string) *failoverSender {
	t.Helper()
	v5Setup()
	p, err := rmq.NewProducer(&rmq.Config{Endpoint: endpoint, Credentials: &credentials.SessionCredentials{}}, rmq.WithTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- p.Start() }() // ends when Start returns
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start v5 producer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("v5 producer Start did not return within 20 s")
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	return &failoverSender{name: "Go v5 SDK (gRPC)", send: func(ctx context.Context, body string) error {
		_, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(body)})
		return err
	}}
}

// runSenders runs each sender in a goroutine of its own, one send every
// ~10 ms (a send that takes longer is followed at once by the next), each
// with a 10 s deadline, until stop is closed; it returns when all ended.
func runSenders(senders []*failoverSender, stop <-chan struct{}) (wait func()) {
	var wg sync.WaitGroup
	for _, s := range senders {
		prefix := strings.Fields(s.name)[0]
		wg.Add(1)
		go func() { // ends when stop is closed; waited for by wait
			defer wg.Done()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				body := fmt.Sprintf("%s-%06d", prefix, i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				began := time.Now()
				err := s.send(ctx, body)
				cancel()
				s.mu.Lock()
				s.events = append(s.events, sendEvent{body: body, at: time.Now(), took: time.Since(began), err: err})
				s.mu.Unlock()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	return wg.Wait
}

// window is what one sender saw around a kill at killed.
type window struct {
	sends, failed       int
	first, last         time.Duration // first and last failure after the kill (0 when none failed)
	firstOKAfter        time.Duration // the first acknowledged send after the last failure
	longest             time.Duration // the longest send
	lastErr             string
	acked, failedBodies []string
}

// windowOf sums up s's events around the kill.
func windowOf(s *failoverSender, killed time.Time) window {
	var w window
	for _, e := range s.events {
		w.sends++
		w.longest = max(w.longest, e.took)
		if e.err == nil {
			w.acked = append(w.acked, e.body)
			continue
		}
		w.failed++
		w.failedBodies = append(w.failedBodies, e.body)
		if w.failed == 1 {
			w.first = e.at.Sub(killed)
		}
		w.last, w.lastErr = e.at.Sub(killed), e.err.Error()
	}
	for _, e := range s.events {
		if e.err == nil && e.at.Sub(killed) > w.last {
			w.firstOKAfter = e.at.Sub(killed)
			break
		}
	}
	return w
}

// recovered reports whether s's sends have been acknowledged for at
// least calm, with no failure in between (or none at all).
func recovered(s *failoverSender, calm time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.events)
	if n == 0 || s.events[n-1].err != nil {
		return false
	}
	for i := n - 1; i >= 0; i-- {
		if s.events[i].err != nil {
			return s.events[n-1].at.Sub(s.events[i].at) >= calm
		}
	}
	return true
}
