package main

// A wheelmq cluster on loopback with real processes: two name servers
// (wheelmq namesrv) and two brokers (wheelmq broker --namesrv 'a;b'),
// driven by wheelctl's topic create --cluster, the native producer, and the
// official Go producer and push consumer. See TestCluster.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	goproducer "github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/admin"
	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// ledger records what producers had acknowledged, where.
type ledger struct {
	mu     sync.Mutex
	acked  map[string]string // body -> broker name
	failed map[string]bool   // bodies with a failed attempt (may be stored twice)
	tried  map[string]bool   // bodies of every attempt (may be stored unacknowledged)
}

func newLedger() *ledger {
	return &ledger{acked: map[string]string{}, failed: map[string]bool{}, tried: map[string]bool{}}
}

func (l *ledger) ack(body, broker string) {
	l.mu.Lock()
	l.acked[body] = broker
	l.mu.Unlock()
}

// perBroker counts the acknowledged bodies with prefix by broker.
func (l *ledger) perBroker(prefix string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for b, broker := range l.acked {
		if strings.HasPrefix(b, prefix) {
			out[broker]++
		}
	}
	return out
}

// checkSpread wants n acknowledged sends with prefix, at least a third on
// each of broker-a and broker-b.
func checkSpread(t *testing.T, l *ledger, prefix string, n int) {
	t.Helper()
	got := l.perBroker(prefix)
	if got["broker-a"]+got["broker-b"] != n || got["broker-a"] < n/3 || got["broker-b"] < n/3 {
		t.Fatalf("%s: %d sends acknowledged per broker %v; want %d, at least %d on each", prefix,
			got["broker-a"]+got["broker-b"], got, n, n/3)
	}
	t.Logf("%s: %v", prefix, got)
}

// clusterProducer starts the native producer on both name servers.
func clusterProducer(t *testing.T, ns []string, l *ledger, faultTolerance bool) *producer.Producer {
	t.Helper()
	p, err := producer.New(producer.WithNameServers(ns...), producer.WithGroup(processtest.Unique("pg")),
		producer.WithInstanceName(processtest.Unique("native")), producer.WithFaultTolerance(faultTolerance),
		producer.WithClientConfig(func(c *mqclient.Config) { c.RouteRefreshInterval = time.Second }),
		producer.WithHooks(producer.Hook{Before: func(si *producer.SendInfo) {
			l.mu.Lock()
			for _, m := range si.Messages {
				l.tried[string(m.Body)] = true
			}
			l.mu.Unlock()
		}, After: func(si *producer.SendInfo) {
			if si.Err != nil {
				l.mu.Lock()
				for _, m := range si.Messages {
					l.failed[string(m.Body)] = true
				}
				l.mu.Unlock()
			}
		}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// sendNative sends n messages with prefix synchronously, each acknowledged.
func sendNative(t *testing.T, p *producer.Producer, l *ledger, topic, prefix string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterWait)
	defer cancel()
	for i := range n {
		body := fmt.Sprintf("%s-%d", prefix, i)
		res, err := p.Send(ctx, producer.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("native send %s: %v", body, err)
		}
		l.ack(body, res.Queue.Broker)
	}
}

// sendOfficial sends n messages with prefix through the official Go
// producer on both name servers.
func sendOfficial(t *testing.T, ns []string, l *ledger, topic, prefix string, n int) {
	t.Helper()
	p := processtest.Producer(t, ns[0], goproducer.WithNsResolver(primitive.NewPassthroughResolver(ns)))
	ctx, cancel := context.WithTimeout(context.Background(), clusterWait)
	defer cancel()
	for i := range n {
		body := fmt.Sprintf("%s-%d", prefix, i)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("official send %s: %v %v", body, res, err)
		}
		l.ack(body, res.MessageQueue.BrokerName)
	}
	_ = p.Shutdown()
}

// TestCluster runs two name servers and two brokers as real processes:
//
//  1. both name servers list both brokers; wheelctl topic create --cluster
//     creates the topic on both, and both name servers route it to both;
//  2. the native producer and the official Go producer spread sends over
//     both brokers (each gets at least a third);
//  3. broker-b is SIGKILLed during native sends with fault tolerance on:
//     sends go on on broker-a (the first within a second), none fails, and
//     the name servers drop broker-b at once (its connection closed);
//  4. name server 1 is SIGKILLed and broker-b restarts on its data
//     directory: it registers with name server 2, and new producers (given
//     both name servers) spread over both brokers again;
//  5. a consumer group of two official Go push consumers, given both name
//     servers and started before the first send, receives each record of
//     step 2 once, and in the end every acknowledged message (broker-b's
//     from before the kill included) from both brokers; around broker-b's
//     restart a record may reach both consumers (see checkDeliveries).
func TestCluster(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	if testing.Short() {
		t.Skip("builds and runs wheelmq processes")
	}
	bin := buildWheelmq(t)
	ns1addr, ns2addr := processtest.ReserveAddr(t), processtest.ReserveAddr(t)
	ns1 := startWheelmq(t, bin, "namesrv-1", ns1addr, "namesrv", "--listen", ns1addr, "--data", t.TempDir())
	startWheelmq(t, bin, "namesrv-2", ns2addr, "namesrv", "--listen", ns2addr, "--data", t.TempDir())
	nsList := []string{ns1addr, ns2addr}
	brokers := map[string]*wmProc{}
	for _, name := range []string{"broker-a", "broker-b"} {
		addr := processtest.ReserveAddr(t)
		brokers[name] = startWheelmq(t, bin, name, addr, "broker", "--namesrv", strings.Join(nsList, ";"),
			"--broker-name", name, "--listen", addr, "--grpc-listen=", "--data", t.TempDir())
	}
	both := []string{"broker-a", "broker-b"}
	for _, ns := range nsList {
		waitUntil(t, "GET_BROKER_CLUSTER_INFO of "+ns+" lists both brokers", func() bool {
			return slices.Equal(clusterBrokerNames(ns), both)
		})
	}

	// 1. The topic, on the whole cluster through wheelctl.
	topic := processtest.Unique("cluster")
	out := mustRun(t, "--namesrv", strings.Join(nsList, ";"), "topic", "create", topic,
		"--cluster", "DefaultCluster", "--queues", "4")
	for _, want := range []string{"created topic " + topic + " on broker-a (", "created topic " + topic + " on broker-b (",
		"topic " + topic + " created on 2 brokers"} {
		if !strings.Contains(out, want) {
			t.Fatalf("topic create output lacks %q:\n%s", want, out)
		}
	}
	for _, ns := range nsList {
		waitUntil(t, "route of the topic on "+ns+" has both brokers", func() bool {
			return slices.Equal(routeBrokerNames(ns, topic), both)
		})
	}

	// The consumer group, started before messages flow.
	l := newLedger()
	native := clusterProducer(t, nsList, l, true)
	g := startGroup(t, nsList, topic, native)

	// 2. Both producers spread over both brokers.
	sendNative(t, native, l, topic, "native", 120)
	checkSpread(t, l, "native", 120)
	sendOfficial(t, nsList, l, topic, "official", 120)
	checkSpread(t, l, "official", 120)
	// A settled group receives each record once.
	g.waitReceived(t, l, clusterWait)
	g.checkDeliveries(t, l, true)

	// 3. SIGKILL broker-b during sends.
	killAt, firstAfter := killDuringSends(t, native, l, topic, brokers["broker-b"])
	if wait := firstAfter.Sub(killAt); wait > time.Second {
		t.Errorf("first send acknowledged by broker-a %v after broker-b was killed, want within 1 s", wait)
	} else {
		t.Logf("first send acknowledged by broker-a %v after broker-b was killed", wait)
	}
	for _, ns := range nsList {
		// Far sooner than the 120 s heartbeat timeout: the connection closed.
		waitUntil(t, ns+" drops broker-b from the route", func() bool {
			return slices.Equal(routeBrokerNames(ns, topic), []string{"broker-a"})
		})
	}

	// 4. Name server 1 dies; broker-b comes back on its data directory.
	ns1.kill(t)
	brokers["broker-b"].start(t)
	waitUntil(t, "broker-b registers again with name server 2", func() bool {
		return slices.Equal(routeBrokerNames(ns2addr, topic), both)
	})
	// wheelctl, given both name servers, goes on with the live one.
	if out := mustRun(t, "--namesrv", strings.Join(nsList, ";"), "cluster", "list"); len(rowsOf(out, "DefaultCluster")) != 2 {
		t.Fatalf("cluster list with name server 1 dead:\n%s", out)
	}
	after := clusterProducer(t, nsList, l, false)
	sendNative(t, after, l, topic, "after", 120)
	checkSpread(t, l, "after", 120)
	sendOfficial(t, nsList, l, topic, "official-after", 120)
	checkSpread(t, l, "official-after", 120)

	// 5. The group got everything, broker-b's from before the kill too.
	// The Go client does not fail the requests pending on a connection that
	// closed: a long poll that was waiting on broker-b when it died ends at
	// its 30 s timeout (then 3 s of back-off), unless a rebalance moves the
	// queue first. Allow for that.
	g.waitReceived(t, l, 60*time.Second)
	g.checkDeliveries(t, l, false)
}

// killDuringSends sends from one goroutine while it SIGKILLs broker b, and
// returns when the kill happened and when broker-a first acknowledged a send
// after it. Every send must succeed.
func killDuringSends(t *testing.T, p *producer.Producer, l *ledger, topic string, b *wmProc) (killAt, firstAfter time.Time) {
	t.Helper()
	type ack struct {
		at     time.Time
		broker string
		err    error
	}
	var mu sync.Mutex
	var acks []ack
	count := func(since time.Time, broker string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range acks {
			if a.err == nil && !a.at.Before(since) && (broker == "" || a.broker == broker) {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			body := fmt.Sprintf("kill-%d", i)
			sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := p.Send(sctx, producer.NewMessage(topic, []byte(body)))
			scancel()
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return
			}
			a := ack{at: time.Now(), err: err}
			if err == nil {
				a.broker = res.Queue.Broker
				l.ack(body, a.broker)
			} else {
				a.err = fmt.Errorf("send %s: %w", body, err)
			}
			mu.Lock()
			acks = append(acks, a)
			mu.Unlock()
		}
	}()
	defer func() { cancel(); <-done }()
	start := time.Now()
	waitUntil(t, "40 sends acknowledged by broker-b before the kill", func() bool { return count(start, "broker-b") >= 40 })
	killAt = time.Now()
	b.kill(t)
	waitUntil(t, "200 sends acknowledged after the kill", func() bool { return count(killAt, "") >= 200 })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, a := range acks {
		if a.err != nil {
			t.Fatalf("a send failed with fault tolerance on: %v", a.err)
		}
		if a.at.After(killAt) && a.broker == "broker-a" && firstAfter.IsZero() {
			firstAfter = a.at
		}
	}
	return killAt, firstAfter
}

// TestCreateOnBrokersReportsEach creates a topic on a live broker and on an
// address nothing listens on: one line each, the live broker gets the
// topic, and the command fails naming the broker that did not.
func TestCreateOnBrokersReportsEach(t *testing.T) {
	n := startNode(t, processtest.Options{})
	dead := closedAddr(t)
	var out strings.Builder
	g := &globals{stdout: &out, timeout: 2 * time.Second}
	s := g.session()
	defer s.Close()
	topic := processtest.Unique("each")
	err := createOnBrokers(context.Background(), g, s, []admin.Broker{
		{Name: "broker-live", Addr: n.BrokerAddr()}, {Name: "broker-dead", Addr: dead},
	}, admin.TopicConfig{TopicName: topic, ReadQueueNums: 2, WriteQueueNums: 2, Perm: admin.PermRead | admin.PermWrite})
	if err == nil || !strings.Contains(err.Error(), "failed on 1 of 2 brokers: broker-dead ("+dead+")") {
		t.Fatalf("error %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "created topic "+topic+" on broker-live") ||
		!strings.HasPrefix(lines[1], "FAILED to create topic "+topic+" on broker-dead") {
		t.Fatalf("output:\n%s", out.String())
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), topic)
}
