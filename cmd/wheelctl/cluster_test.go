package main

// A wheelmq cluster on loopback with real processes: two name servers
// (wheelmq namesrv) and two brokers (wheelmq broker --namesrv 'a;b'),
// driven by wheelctl's topic create --cluster, the native producer, and the
// official Go producer and push consumer. See TestCluster.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	goproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/cmd/wheelctl/internal/admin"
	"github.com/wheelmq/wheelmq/netloop/mqclient"
	"github.com/wheelmq/wheelmq/netloop/producer"
)

// clusterWait bounds every wait of the cluster test.
const clusterWait = 20 * time.Second

// wheelmqBin is the wheelmq binary, built once per test run into binDir
// (removed by TestMain).
var wheelmqBin struct {
	once sync.Once
	path string
	err  error
}

var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildWheelmq compiles cmd/wheelmq once for the whole package.
func buildWheelmq(t *testing.T) string {
	t.Helper()
	wheelmqBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "wheelctl-test-bin-")
		if err != nil {
			wheelmqBin.err = err
			return
		}
		binDir = dir
		path := filepath.Join(dir, "wheelmq")
		cmd := exec.Command("go", "build", "-o", path, "../wheelmq")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			wheelmqBin.err = fmt.Errorf("build wheelmq: %w", err)
			return
		}
		wheelmqBin.path = path
	})
	if wheelmqBin.err != nil {
		t.Fatal(wheelmqBin.err)
	}
	return wheelmqBin.path
}

// loopbackAddr returns a free loopback host:port.
func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// wmProc is one wheelmq process of the cluster; start runs it again with
// the same arguments (same ports and data directory).
type wmProc struct {
	name    string
	bin     string
	args    []string
	addr    string // the name server's or the broker's address
	metrics string
	log     string
	cmd     *exec.Cmd
}

func startWheelmq(t *testing.T, bin, name, addr string, args ...string) *wmProc {
	t.Helper()
	p := &wmProc{name: name, bin: bin, addr: addr, metrics: loopbackAddr(t),
		log: filepath.Join(t.TempDir(), name+".log")}
	p.args = append(args, "--metrics-listen", p.metrics, "--log-level", "warn", "--log-format", "json")
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			if b, err := os.ReadFile(p.log); err == nil && len(b) > 0 {
				t.Logf("%s log:\n%s", name, b[max(0, len(b)-4000):])
			}
		}
	})
	p.start(t)
	return p
}

// start runs the process and waits for its /healthz.
func (p *wmProc) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	waitUntil(t, p.name+" healthy", func() bool {
		resp, err := http.Get("http://" + p.metrics + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kill SIGKILLs the process (if running) and reaps it.
func (p *wmProc) kill(t *testing.T) {
	t.Helper()
	if p.cmd == nil || p.cmd.Process == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// waitUntil polls cond until it holds, failing the test after clusterWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(clusterWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, clusterWait)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("%s took %v", what, d.Round(time.Millisecond))
	}
}

// routeBrokerNames returns the broker names in a name server's route of
// topic (nil when it has none or cannot be asked).
func routeBrokerNames(ns, topic string) []string {
	s := &admin.Session{Timeout: 2 * time.Second}
	defer s.Close()
	r, err := s.Route(context.Background(), ns, topic)
	if err != nil {
		return nil
	}
	var names []string
	for _, q := range r.Queues {
		names = append(names, q.BrokerName)
	}
	return names
}

// clusterBrokerNames returns the master broker names a name server lists
// in GET_BROKER_CLUSTER_INFO for DefaultCluster.
func clusterBrokerNames(ns string) []string {
	s := &admin.Session{Timeout: 2 * time.Second}
	defer s.Close()
	bs, err := s.Brokers(context.Background(), ns)
	if err != nil {
		return nil
	}
	var names []string
	for _, b := range bs {
		if b.Cluster == "DefaultCluster" && b.ID == 0 {
			names = append(names, b.Name)
		}
	}
	return names
}

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
	if testing.Short() {
		t.Skip("builds and runs wheelmq processes")
	}
	bin := buildWheelmq(t)
	ns1addr, ns2addr := loopbackAddr(t), loopbackAddr(t)
	ns1 := startWheelmq(t, bin, "namesrv-1", ns1addr, "namesrv", "--listen", ns1addr)
	startWheelmq(t, bin, "namesrv-2", ns2addr, "namesrv", "--listen", ns2addr)
	nsList := []string{ns1addr, ns2addr}
	brokers := map[string]*wmProc{}
	for _, name := range []string{"broker-a", "broker-b"} {
		addr := loopbackAddr(t)
		brokers[name] = startWheelmq(t, bin, name, addr, "broker", "--namesrv", strings.Join(nsList, ";"),
			"--broker-name", name, "--listen", addr, "--data", t.TempDir())
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

// group is a consumer group of two official Go push consumers.
type group struct {
	recs []*processtest.Received
}

// startGroup starts two official Go push consumers of topic in one group,
// given every name server, and waits until the group has split the queues:
// rounds of 8 probe messages (one per queue, round robin) until two
// rounds in a row each reach exactly one consumer, 4 to each. Starting
// consumers before messages flow keeps a rebalance from handing a
// half-consumed queue over (which RocketMQ answers with redelivery).
func startGroup(t *testing.T, ns []string, topic string, p *producer.Producer) *group {
	t.Helper()
	name := processtest.Unique("cg")
	resolver := consumer.WithNsResolver(primitive.NewPassthroughResolver(ns))
	processtest.QuietClient()
	if lvl := os.Getenv("WHEELMQ_TEST_CLIENT_LOG"); lvl != "" { // e.g. info: the Go client's rebalances
		rlog.SetLogLevel(lvl)
	}
	g := &group{}
	for range 2 {
		_, rec := processtest.PushConsumer(t, ns[0], name, topic, "*", resolver)
		g.recs = append(g.recs, rec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterWait)
	defer cancel()
	clean := 0
	for round := 0; clean < 2; round++ {
		if ctx.Err() != nil {
			t.Fatalf("the consumer group did not settle within %v", clusterWait)
		}
		var bodies []string
		for i := range 8 {
			body := fmt.Sprintf("settle-%d-%d", round, i)
			if _, err := p.Send(ctx, producer.NewMessage(topic, []byte(body))); err != nil {
				t.Fatalf("probe %s: %v", body, err)
			}
			bodies = append(bodies, body)
		}
		var per []int
		waitUntil(t, "probes of round "+strconv.Itoa(round)+" consumed", func() bool {
			per = g.count(bodies)
			return per[0]+per[1] >= len(bodies)
		})
		if per[0] == 4 && per[1] == 4 {
			clean++
		} else {
			clean = 0
		}
		t.Logf("settle round %d: deliveries per consumer %v", round, per)
	}
	return g
}

// count returns how many deliveries of bodies each consumer had.
func (g *group) count(bodies []string) []int {
	want := map[string]bool{}
	for _, b := range bodies {
		want[b] = true
	}
	out := make([]int, len(g.recs))
	for i, r := range g.recs {
		for _, m := range r.Snapshot() {
			if want[string(m.Body)] {
				out[i]++
			}
		}
	}
	return out
}

// groupDelivery is one message a consumer of the group received.
type groupDelivery struct {
	consumer int
	body     string
	pos      recordPos
}

// recordPos is where a message is stored.
type recordPos struct {
	broker string
	queue  int
	offset int64
}

// deliveries returns what the group received, without the settle probes.
func (g *group) deliveries() []groupDelivery {
	var out []groupDelivery
	for i, r := range g.recs {
		for _, m := range r.Snapshot() {
			if body := string(m.Body); !strings.HasPrefix(body, "settle-") {
				out = append(out, groupDelivery{i, body, recordPos{m.Queue.BrokerName, m.Queue.QueueId, m.QueueOffset}})
			}
		}
	}
	return out
}

// waitReceived waits until the group received every message l
// acknowledged, within limit.
func (g *group) waitReceived(t *testing.T, l *ledger, limit time.Duration) {
	t.Helper()
	l.mu.Lock()
	acked := maps.Clone(l.acked)
	l.mu.Unlock()
	start := time.Now()
	for {
		seen := map[string]bool{}
		for _, d := range g.deliveries() {
			seen[d.body] = true
		}
		missing := 0
		for b := range acked {
			if !seen[b] {
				missing++
			}
		}
		if missing == 0 {
			t.Logf("the group has all %d acknowledged messages, %v after the last send", len(acked),
				time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > limit {
			t.Fatalf("the group received %d of %d acknowledged messages within %v", len(acked)-missing, len(acked), limit)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// checkDeliveries checks what the group received: only messages a
// producer sent; a body stored twice only when a send attempt of it failed
// (a retry after a lost answer); every consumer got messages; and, with
// exactlyOnce, no stored record delivered twice. Without it a record may
// be delivered twice, but only to two different consumers: a restarted
// broker's consumer table is empty until each client's next heartbeat
// (the Go client sends them one client at a time, every 30 s and after its
// queues change), so a rebalance meanwhile works from a partial member
// list and can hand a queue to a second consumer, which starts from the
// broker's last persisted offset: RocketMQ's at-least-once across a
// rebalance.
func (g *group) checkDeliveries(t *testing.T, l *ledger, exactlyOnce bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	byPos := map[recordPos][]int{}
	stored := map[string]map[recordPos]bool{}
	perConsumer := make([]map[string]int, len(g.recs))
	for i := range perConsumer {
		perConsumer[i] = map[string]int{}
	}
	for _, d := range g.deliveries() {
		if _, ok := l.acked[d.body]; !ok && !l.tried[d.body] {
			t.Errorf("received a message nobody sent: %q", d.body)
		}
		byPos[d.pos] = append(byPos[d.pos], d.consumer)
		if stored[d.body] == nil {
			stored[d.body] = map[recordPos]bool{}
		}
		stored[d.body][d.pos] = true
		perConsumer[d.consumer][d.pos.broker]++
	}
	twice := 0
	for p, cs := range byPos {
		if len(cs) == 1 {
			continue
		}
		twice++
		if exactlyOnce || len(cs) > 2 || cs[0] == cs[1] {
			t.Errorf("record %+v delivered to consumers %v", p, cs)
		}
	}
	for body, at := range stored {
		if len(at) > 1 && !l.failed[body] {
			t.Errorf("%q stored %d times without a failed send attempt", body, len(at))
		}
	}
	for i, pc := range perConsumer {
		if len(pc) == 0 {
			t.Errorf("consumer %d received nothing: the group did not spread (%v)", i, perConsumer)
		}
	}
	t.Logf("received per consumer and broker: %v; %d records delivered twice (%d acknowledged, %d with a failed attempt)",
		perConsumer, twice, len(l.acked), len(l.failed))
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
