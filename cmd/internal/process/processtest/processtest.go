// Package processtest starts real wheelmq processes for tests and drives them
// with the official RocketMQ Go client, in the style of net/http/httptest.
//
// Everything runs on loopback with ports picked by the kernel: a test never
// needs a fixed port and tests can run in parallel.
package processtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

var quietClient sync.Once

// QuietClient lowers the Go client's own logging to errors.
func QuietClient() {
	quietClient.Do(func() { rlog.SetLogLevel("error") })
}

var seq atomic.Int64

// Unique returns a name unique within the test process.
func Unique(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), seq.Add(1))
}

// Options tweaks a test node.
type Options struct {
	// Dir is the data directory (default t.TempDir()).
	Dir string
	// Mutate adjusts the broker configuration.
	Mutate func(*pipeline.Config)
	// Metrics enables the HTTP endpoint.
	Metrics bool
	// MutateNode adjusts the process configuration (after Mutate).
	MutateNode func(*process.Config)
	// Admin signs Start's own requests (the wait for the broker's
	// registration), for a node with an ACL (process.Config.ACL).
	Admin auth.Credentials
	// ClientTLS, when set, is the TLS configuration of Start's own
	// requests (the wait for the registration): for nodes whose ports
	// enforce TLS.
	ClientTLS *tls.Config
}

// Start runs a broker with an embedded name server on loopback, the name
// server's files in Dir/namesrv as cmd/wheelmq has them (unless Mutate sets
// a StoreFS: then the KV configuration stays in memory); it is stopped when
// the test ends (Stop it earlier to restart on the same Dir).
func Start(t testing.TB, o Options) *process.Node {
	t.Helper()
	QuietClient()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	bc := pipeline.DefaultConfig()
	bc.DataDir = o.Dir
	bc.Listen = "127.0.0.1:0"
	bc.SegmentSize = 8 << 20
	bc.RegisterInterval = time.Second
	lvl := zerolog.WarnLevel
	if os.Getenv("WHEELMQ_TEST_LOG") != "" {
		lvl = zerolog.DebugLevel
	}
	bc.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(lvl).With().Timestamp().Logger()
	// Tests do not depend on how full the machine's disk is (past the full
	// ratio the broker refuses sends): a test that wants it sets DiskUsage.
	bc.DiskUsage = func() (float64, error) { return 0.1, nil }
	if o.Mutate != nil {
		o.Mutate(&bc)
	}
	cfg := process.Config{Broker: bc, RunBroker: true, NamesrvListen: "127.0.0.1:0", Logger: bc.Logger}
	if bc.StoreFS == nil {
		// Dir is on the real file system (a test's StoreFS may put it
		// elsewhere, e.g. inside a crash file system).
		cfg.NamesrvDir = filepath.Join(o.Dir, "namesrv")
	}
	if o.Metrics {
		cfg.MetricsListen = "127.0.0.1:0"
	}
	if o.MutateNode != nil {
		o.MutateNode(&cfg)
	}
	n, err := process.Start(cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	if cfg.RunBroker && cfg.NamesrvListen != "" && len(cfg.Broker.NameServers) == 0 {
		// The broker registers with its embedded name server in the
		// background: a test starts once it has, as a client that starts later would
		// find it (after a restart its topics are routable again).
		waitRegistered(t, n, o.Admin, o.ClientTLS)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	return n
}

// Invoke sends one request to addr and returns the response.
func Invoke(t testing.TB, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	return InvokeSigned(t, addr, req, auth.Credentials{})
}

// InvokeTLS is Invoke over TLS with cfg (nil: plaintext).
func InvokeTLS(t testing.TB, addr string, cfg *tls.Config, req *remoting.Command) *remoting.Command {
	t.Helper()
	return invoke(t, addr, req, auth.Credentials{}, cfg)
}

// InvokeSigned is Invoke with req signed by creds (empty: unsigned).
func InvokeSigned(t testing.TB, addr string, req *remoting.Command, creds auth.Credentials) *remoting.Command {
	t.Helper()
	return invoke(t, addr, req, creds, nil)
}

// InvokeSignedTLS is InvokeSigned over TLS with cfg.
func InvokeSignedTLS(t testing.TB, addr string, cfg *tls.Config, req *remoting.Command, creds auth.Credentials) *remoting.Command {
	t.Helper()
	return invoke(t, addr, req, creds, cfg)
}

// invoke sends req, signed by creds (empty: unsigned), over TLS with cfg
// (nil: plaintext).
func invoke(t testing.TB, addr string, req *remoting.Command, creds auth.Credentials, cfg *tls.Config) *remoting.Command {
	t.Helper()
	creds.Sign(req)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{TLS: cfg})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	resp, err := c.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("invoke code %d on %s: %v", req.Code, addr, err)
	}
	return resp
}

// CreateTopic creates topic with n queues on the node's broker and waits
// until the name server serves its route.
func CreateTopic(t testing.TB, n *process.Node, topic string, queues int) {
	t.Helper()
	q := strconv.Itoa(queues)
	resp := Invoke(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	WaitRoute(t, n.NamesrvAddr(), topic)
}

// waitRegistered waits until the node's name server lists its broker.
func waitRegistered(t testing.TB, n *process.Node, creds auth.Credentials, cfg *tls.Config) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp := invoke(t, n.NamesrvAddr(), remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), creds, cfg)
		if resp.Code == remoting.Success && strings.Contains(string(resp.Body), n.Broker().Advertise()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not register with its name server within 15 s: %d %s", resp.Code, resp.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitRoute waits until the name server has a route for topic.
func WaitRoute(t testing.TB, namesrv, topic string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp := Invoke(t, namesrv, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if resp.Code == remoting.Success {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route for %s after 15 s: code %d %s", topic, resp.Code, resp.Remark)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Producer starts an official Go client producer against the name server.
func Producer(t testing.TB, namesrv string, opts ...producer.Option) rocketmqProducer {
	t.Helper()
	QuietClient()
	all := append([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		producer.WithGroupName(Unique("pg")),
		producer.WithInstanceName(Unique("p")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, opts...)
	p, err := producer.NewDefaultProducer(all...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start producer: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// TransactionProducer starts an official Go client transaction producer
// (rocketmq.NewTransactionProducer) of group against the name server; its
// instance name is unique, so that several in one test are distinct
// clients with their own check handlers.
func TransactionProducer(t testing.TB, namesrv, group string, l primitive.TransactionListener,
	opts ...producer.Option) rocketmq.TransactionProducer {
	t.Helper()
	QuietClient()
	all := append([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		producer.WithGroupName(group),
		producer.WithInstanceName(Unique("tp")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, opts...)
	p, err := rocketmq.NewTransactionProducer(l, all...)
	if err != nil {
		t.Fatalf("new transaction producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start transaction producer: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// rocketmqProducer is the client's producer interface.
type rocketmqProducer = interface {
	Start() error
	Shutdown() error
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
	SendAsync(ctx context.Context, mq func(ctx context.Context, result *primitive.SendResult, err error),
		msg ...*primitive.Message) error
	SendOneWay(ctx context.Context, mq ...*primitive.Message) error
}

// Received collects what a push consumer got.
type Received struct {
	mu   sync.Mutex
	Msgs []*primitive.MessageExt
	at   []time.Time
	ch   chan struct{}
}

// Add records messages (called from the consumer).
func (r *Received) Add(msgs ...*primitive.MessageExt) {
	r.mu.Lock()
	now := time.Now()
	for _, m := range msgs {
		r.Msgs = append(r.Msgs, m)
		r.at = append(r.at, now)
	}
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

// Len is the number of messages received.
func (r *Received) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.Msgs)
}

// Snapshot copies what was received.
func (r *Received) Snapshot() []*primitive.MessageExt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*primitive.MessageExt(nil), r.Msgs...)
}

// WaitFor waits until at least n messages arrived or the timeout passed.
func (r *Received) WaitFor(n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for r.Len() < n {
		select {
		case <-r.ch:
		case <-deadline:
			return r.Len() >= n
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}

// WaitUntil waits until done, given everything received so far, reports
// true, or the timeout passed; it returns done's last answer. Unlike
// WaitFor it is not fooled by messages beyond the expected ones (sends
// whose acknowledgement a crash lost, redeliveries) arriving first.
func (r *Received) WaitUntil(done func([]*primitive.MessageExt) bool, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for !done(r.Snapshot()) {
		select {
		case <-r.ch:
		case <-deadline:
			return done(r.Snapshot())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}

// HasBodies returns a WaitUntil condition: every body of want has arrived,
// comparing the first n bytes of each message body (n <= 0: the whole body).
func HasBodies[V any](want map[string]V, n int) func([]*primitive.MessageExt) bool {
	return func(ms []*primitive.MessageExt) bool {
		seen := make(map[string]bool, len(ms))
		for _, m := range ms {
			b := m.Body
			if n > 0 && len(b) > n {
				b = b[:n]
			}
			seen[string(b)] = true
		}
		for k := range want {
			if !seen[k] {
				return false
			}
		}
		return true
	}
}

// PushConsumer starts an official Go client push consumer of topic in
// group, with the selector expression ("*" for all), recording into the
// returned Received. It consumes from the first offset.
func PushConsumer(t testing.TB, namesrv, group, topic, expr string, opts ...consumer.Option) (rocketmqPushConsumer, *Received) {
	t.Helper()
	QuietClient()
	all := append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		consumer.WithGroupName(group),
		consumer.WithInstance(Unique("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := consumer.NewPushConsumer(all...)
	if err != nil {
		t.Fatalf("new push consumer: %v", err)
	}
	rec := &Received{ch: make(chan struct{}, 1)}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			rec.Add(msgs...)
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start push consumer: %v", err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return c, rec
}

// rocketmqPushConsumer is the client's push consumer interface.
type rocketmqPushConsumer = interface {
	Start() error
	Shutdown() error
}

// WaitBrokerRegistered waits (up to timeout) until the name server at
// namesrv lists the broker advertised as broker: a process is healthy
// before its first registration, and a client that asks the name server
// for routes in between finds none ("route info not found").
func WaitBrokerRegistered(t testing.TB, namesrv, broker string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp := Invoke(t, namesrv, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		if resp.Code == remoting.Success && strings.Contains(string(resp.Body), broker) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %s not registered with the name server %s within %v: %d %s", broker, namesrv, timeout, resp.Code, resp.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
