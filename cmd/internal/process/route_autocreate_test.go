package process_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// routeAsker asks one name server for routes over one connection, dialed
// once, so that nothing (a dial) separates a SEND_OK from the question.
type routeAsker struct {
	t *testing.T
	c *remoting.Client
}

func newRouteAsker(t *testing.T, addr string) *routeAsker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial name server %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &routeAsker{t: t, c: c}
}

// route returns the name server's route of topic, or an error saying why
// there is none (TOPIC_NOT_EXIST, or a route without the broker's queues).
func (a *routeAsker) route(topic, broker string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := a.c.Invoke(ctx, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		a.t.Fatalf("GET_ROUTEINFO_BY_TOPIC %s: %v", topic, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("code %d %s", resp.Code, resp.Remark)
	}
	rd, err := namesrv.ParseRouteData(resp.Body)
	if err != nil {
		a.t.Fatalf("route of %s: %v", topic, err)
	}
	for _, q := range rd.QueueDatas {
		if q.BrokerName == broker && q.WriteQueueNums > 0 && q.ReadQueueNums > 0 {
			return nil
		}
	}
	return fmt.Errorf("route without queues of %s: %+v", broker, rd.QueueDatas)
}

// nameServerAlone starts a process that runs only a name server.
func nameServerAlone(t *testing.T) *process.Node {
	t.Helper()
	ns, err := process.Start(process.Config{NamesrvListen: "127.0.0.1:0",
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Stop(context.Background()) })
	return ns
}

// slowLink forwards connections to target, holding every chunk from the
// dialer back by delay (answers come back at once): a name server that
// takes delay to take a registration in.
func slowLink(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			go func() {
				defer wg.Done()
				defer out.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := in.Read(buf)
					if err != nil {
						return
					}
					time.Sleep(delay)
					if _, err := out.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				defer in.Close()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// routeSetups are the name servers the route tests run with: the embedded
// one, and a separate one the broker reaches over a link that holds its
// registrations back (so that answering a send before the name server has
// the topic would be seen every time, not only when the race is lost).
var routeSetups = []struct {
	name  string
	delay time.Duration
}{
	{"embedded name server", 0},
	{"name server behind a 30 ms link", 30 * time.Millisecond},
}

// startRouted starts a broker for a route test and returns it with the
// address of the name server its clients use.
func startRouted(t *testing.T, delay time.Duration) (*process.Node, string) {
	t.Helper()
	if delay == 0 {
		n := processtest.Start(t, processtest.Options{})
		return n, n.NamesrvAddr()
	}
	ns := nameServerAlone(t)
	link := slowLink(t, ns.NamesrvAddr(), delay)
	n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) { c.NameServers = []string{link} }})
	// The producer's first send to a new topic goes by TBW102's route:
	// the broker's first registration must be through.
	processtest.WaitRoute(t, ns.NamesrvAddr(), "TBW102")
	return n, ns.NamesrvAddr()
}

// TestAutoCreatedTopicRoutedAtFirstSendOK sends once, with the official Go
// producer, to each of 50 topics that do not exist yet (the broker creates
// each from TBW102): right after every SEND_OK the name server serves the
// new topic's route with the broker's queues. RocketMQ registers an
// auto-created topic oneway, after answering; wheelmq answers the send
// that creates a topic once every name server acknowledged a registration
// that includes it.
func TestAutoCreatedTopicRoutedAtFirstSendOK(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	for _, setup := range routeSetups {
		t.Run(setup.name, func(t *testing.T) {
			_, nsAddr := startRouted(t, setup.delay)
			p := processtest.Producer(t, nsAddr)
			ask := newRouteAsker(t, nsAddr)
			broker := pipeline.DefaultConfig().BrokerName
			const topicsN = 50
			var missing []string
			for i := range topicsN {
				topic := processtest.Unique("fresh")
				res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("first-%d", i))))
				if err != nil || res.Status != primitive.SendOK {
					t.Fatalf("first send to %s: %v %+v", topic, err, res)
				}
				if err := ask.route(topic, broker); err != nil {
					missing = append(missing, fmt.Sprintf("%s: %v", topic, err))
				}
			}
			t.Logf("%d of %d new topics had no route right after their first SEND_OK", len(missing), topicsN)
			if len(missing) > 0 {
				t.Fatalf("no route right after SEND_OK:\n%s", strings.Join(missing, "\n"))
			}
		})
	}
}

// TestPushConsumerStartsRightAfterFirstSend starts an official Go push
// consumer of a topic right after the send that created it: the consumer's
// start looks up the topic's route and fails ("route info not found") if
// the name server does not have it yet. Every start succeeds, and the
// consumer receives the message.
func TestPushConsumerStartsRightAfterFirstSend(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	for _, setup := range routeSetups {
		t.Run(setup.name, func(t *testing.T) {
			_, nsAddr := startRouted(t, setup.delay)
			// The consumers share the producer's client instance: started
			// and connected, so that Start asks for the route at once.
			instance := processtest.Unique("shared")
			p := processtest.Producer(t, nsAddr, producer.WithInstanceName(instance))
			const topicsN = 5
			var failed []string
			for i := range topicsN {
				if msg := startConsumerAfterFirstSend(t, p, nsAddr, instance, i); msg != "" {
					failed = append(failed, msg)
				}
			}
			t.Logf("%d of %d push consumers started right after the first send failed to start", len(failed), topicsN)
			if len(failed) > 0 {
				t.Fatalf("push consumer start failed:\n%s", strings.Join(failed, "\n"))
			}
		})
	}
}

// startConsumerAfterFirstSend makes a push consumer of a new topic
// (everything but Start), sends the topic's first message, starts the
// consumer and waits for the message; it returns why Start failed ("" if
// it did not).
func startConsumerAfterFirstSend(t *testing.T, p interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, nsAddr, instance string, i int) string {
	t.Helper()
	topic := processtest.Unique("fresh_push")
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		consumer.WithGroupName(processtest.Unique("cg_fresh")), consumer.WithInstance(instance),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatalf("new push consumer: %v", err)
	}
	want := fmt.Sprintf("first-%d", i)
	got := make(chan string, 1)
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				select {
				case got <- string(m.Body):
				default:
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(want)))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("first send to %s: %v %+v", topic, err, res)
	}
	if err := c.Start(); err != nil {
		return fmt.Sprintf("%s: %v", topic, err)
	}
	defer func() { _ = c.Shutdown() }()
	select {
	case body := <-got:
		if body != want {
			t.Errorf("%s: consumed %q, want %q", topic, body, want)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s: the first message was not consumed", topic)
	}
	return ""
}

// blackHole is a name server that accepts connections and reads requests
// but never answers (a hung process, a dead host behind a live proxy).
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startBlackHole(t *testing.T) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(b.release)
	return b
}

// release closes the listener and every connection (again: a no-op).
func (b *blackHole) release() {
	_ = b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
	b.mu.Unlock()
	b.wg.Wait()
}

// TestDownNameServerDelaysFirstSendOnly configures a broker with two name
// servers, a live one and one that is down (nothing listens; or it takes
// requests and never answers), and a short route wait. The first send to
// each new topic still succeeds (its message stored, its answer given once
// the live name server acknowledged the topic and the down one failed or
// the route wait passed), the live name server has the route right after
// SEND_OK, and each first send is counted once as answered without every
// name server's acknowledgement, by the reason: the sends after the first
// to a topic are not held (they would be counted too).
func TestDownNameServerDelaysFirstSendOnly(t *testing.T) {
	t.Parallel() // waits more than it computes: overlaps with the package's other parallel tests
	for _, tc := range []struct {
		name   string
		down   func(t *testing.T) (addr string, release func())
		reason string
	}{
		{"refused", func(t *testing.T) (string, func()) { return processtest.ReserveAddr(t), func() {} }, "failed"},
		{"never answers", func(t *testing.T) (string, func()) {
			b := startBlackHole(t)
			return b.ln.Addr().String(), b.release
		}, "deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := nameServerAlone(t)
			down, release := tc.down(t)
			const routeWait = 300 * time.Millisecond
			n := processtest.Start(t, processtest.Options{Mutate: func(c *pipeline.Config) {
				c.NameServers = []string{ns.NamesrvAddr(), down}
				c.RouteWait = routeWait
			}})
			t.Cleanup(release) // before the broker stops: its unregistration would wait for the black hole
			processtest.WaitRoute(t, ns.NamesrvAddr(), "TBW102")
			p := processtest.Producer(t, ns.NamesrvAddr())
			ask := newRouteAsker(t, ns.NamesrvAddr())
			broker := pipeline.DefaultConfig().BrokerName
			const topicsN = 3
			for range topicsN {
				topic := processtest.Unique("fresh_down")
				res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("first")))
				if err != nil || res.Status != primitive.SendOK {
					t.Fatalf("first send to %s with a name server down: %v %+v", topic, err, res)
				}
				if err := ask.route(topic, broker); err != nil {
					t.Fatalf("the live name server has no route of %s right after SEND_OK: %v", topic, err)
				}
				for j := range 3 {
					res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("next-%d", j))))
					if err != nil || res.Status != primitive.SendOK {
						t.Fatalf("send %d to %s: %v %+v", j, topic, err, res)
					}
				}
			}
			if got := metricValue(t, n, "wheelmq_registrar_unacknowledged_waits_total"); got != topicsN {
				t.Fatalf("wheelmq_registrar_unacknowledged_waits_total = %v, want %d (one per first send)", got, topicsN)
			}
			if got := unackedByReason(t, n, tc.reason); got != topicsN {
				t.Fatalf("unacknowledged waits with reason %q: %v, want %d", tc.reason, got, topicsN)
			}
		})
	}
}

// unackedByReason is wheelmq_registrar_unacknowledged_waits_total{reason}.
func unackedByReason(t *testing.T, n *process.Node, reason string) float64 {
	t.Helper()
	families, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "wheelmq_registrar_unacknowledged_waits_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestCreatedTopicRoutedWhenAnswered sends UPDATE_AND_CREATE_TOPIC (17)
// as admin tools do, then asks the name server for the route at once: it
// is there with the queue counts just set, both for a new topic and for a
// change of an existing one's.
func TestCreatedTopicRoutedWhenAnswered(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	for _, setup := range routeSetups {
		t.Run(setup.name, func(t *testing.T) {
			n, nsAddr := startRouted(t, setup.delay)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			admin, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			ask := newRouteAsker(t, nsAddr)
			queuesOf := func(topic string) int32 {
				resp, err := ask.c.Invoke(ctx, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Code != remoting.Success {
					return 0
				}
				rd, err := namesrv.ParseRouteData(resp.Body)
				if err != nil || len(rd.QueueDatas) != 1 {
					t.Fatalf("route of %s: %v %+v", topic, err, rd)
				}
				return rd.QueueDatas[0].WriteQueueNums
			}
			create := func(topic, queues string) {
				resp, err := admin.Invoke(ctx, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
					"topic": topic, "readQueueNums": queues, "writeQueueNums": queues, "perm": "6",
				}, nil))
				if err != nil || resp.Code != remoting.Success {
					t.Fatalf("UPDATE_AND_CREATE_TOPIC %s: %v %+v", topic, err, resp)
				}
			}
			for range 10 {
				topic := processtest.Unique("admin_fresh")
				create(topic, "4")
				if got := queuesOf(topic); got != 4 {
					t.Fatalf("%s right after creation: %d write queues in the route, want 4", topic, got)
				}
				create(topic, "6")
				if got := queuesOf(topic); got != 6 {
					t.Fatalf("%s right after the update: %d write queues in the route, want 6", topic, got)
				}
			}
		})
	}
}
