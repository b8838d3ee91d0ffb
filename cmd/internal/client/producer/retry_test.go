package producer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/netloop/portres"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

var instanceSeq atomic.Int64

// newProducer starts a producer on fc's name server with its own client
// instance and a short send timeout; it is closed when the test ends.
func newProducer(t testing.TB, namesrv []string, opts ...producer.Option) *producer.Producer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNameServers(namesrv...),
		producer.WithInstanceName(fmt.Sprintf("test-%d", instanceSeq.Add(1))),
		producer.WithSendTimeout(time.Second),
		producer.WithClientConfig(func(c *mqclient.Config) { c.NameServerTimeout = 500 * time.Millisecond }),
	}, opts...)
	p, err := producer.New(all...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// testCtx bounds a test's sends, so a bug cannot hang the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// hookLog records hook calls.
type hookLog struct {
	mu            sync.Mutex
	before, after []producer.SendInfo
}

func (h *hookLog) hook() producer.Hook {
	return producer.Hook{
		Before: func(i *producer.SendInfo) { h.mu.Lock(); h.before = append(h.before, *i); h.mu.Unlock() },
		After:  func(i *producer.SendInfo) { h.mu.Lock(); h.after = append(h.after, *i); h.mu.Unlock() },
	}
}

func TestRetryGoesToAnotherBroker(t *testing.T) {
	fc := newFakeCluster(t, "a", "b")
	fc.setRoute("T", routeSpec{brokers: []string{"a", "b"}, queues: 2, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action {
		return action{code: remoting.ServiceNotAvailable, remark: "broker a is down"}
	})
	check := goroutineCheck(t)
	var hooks hookLog
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithHooks(hooks.hook()))
	ctx := testCtx(t)
	for i := range 10 {
		res, err := p.Send(ctx, producer.NewMessage("T", []byte(fmt.Sprint("m", i))))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Queue.Broker != "b" || res.Status != producer.SendOK {
			t.Fatalf("send %d: result %+v, want SEND_OK on broker b", i, res)
		}
	}
	toA, toB := len(fc.sendsTo("a")), len(fc.sendsTo("b"))
	if toB != 10 || toA == 0 {
		t.Fatalf("broker a got %d sends, b %d; want some to a (round robin) and all 10 delivered by b", toA, toB)
	}
	p.Close()
	check()
	if len(hooks.before) != len(hooks.after) || len(hooks.before) != toA+toB {
		t.Fatalf("hooks: %d before, %d after, %d attempts", len(hooks.before), len(hooks.after), toA+toB)
	}
	failed := 0
	for _, a := range hooks.after {
		var be *producer.BrokerError
		switch a.Queue.Broker {
		case "a":
			if !errors.As(a.Err, &be) || be.Code != remoting.ServiceNotAvailable || a.Result != nil {
				t.Fatalf("after hook of a failed attempt: %+v", a)
			}
			failed++
		case "b":
			if a.Err != nil || a.Result == nil || a.Attempt > 2 {
				t.Fatalf("after hook of a good attempt: %+v", a)
			}
		}
	}
	if failed != toA {
		t.Fatalf("%d after hooks saw the failures of %d attempts", failed, toA)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	tests := []struct {
		name     string
		code     int32
		retries  int
		attempts int
	}{
		{"system error, default retries", remoting.SystemError, producer.DefaultRetries, 3},
		{"busy, no retry", remoting.SystemBusy, 0, 1},
		{"busy, retried after a backoff", remoting.SystemBusy, 2, 3},
		{"topic not exist, 4 retries", remoting.TopicNotExist, 4, 5},
		{"illegal message is not retried", remoting.MessageIllegal, 2, 1},
		{"invalid parameter is not retried", remoting.InvalidParameter, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, "a")
			fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 4, perm: 6})
			fc.brokers["a"].setScript(func(int, *remoting.Command) action { return action{code: tt.code, remark: "scripted"} })
			check := goroutineCheck(t)
			p := newProducer(t, []string{fc.ns.addr()}, producer.WithRetries(tt.retries))
			_, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x")))
			var be *producer.BrokerError
			if !errors.As(err, &be) || be.Code != tt.code || be.Remark != "scripted" || be.Broker != "a" {
				t.Fatalf("err %v, want a BrokerError with code %d", err, tt.code)
			}
			if got := len(fc.sendsTo("a")); got != tt.attempts {
				t.Fatalf("%d attempts, want %d", got, tt.attempts)
			}
			p.Close()
			check()
		})
	}
}

func TestSilentAndGarbageBrokers(t *testing.T) {
	tests := []struct {
		name string
		act  action
		want []error
	}{
		{"silent", action{silent: true}, []error{remoting.ErrTimeout, context.DeadlineExceeded}},
		{"garbage", action{garbage: true}, []error{remoting.ErrClosed, remoting.ErrMalformed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, "a")
			fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
			fc.brokers["a"].setScript(func(int, *remoting.Command) action { return tt.act })
			check := goroutineCheck(t)
			p := newProducer(t, []string{fc.ns.addr()}, producer.WithSendTimeout(200*time.Millisecond), producer.WithRetries(1))
			_, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x")))
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Fatalf("err %v, want it to match %v", err, w)
				}
			}
			if got := len(fc.sendsTo("a")); got != 2 {
				t.Fatalf("%d attempts, want 2", got)
			}
			// The producer recovers once the broker behaves.
			fc.brokers["a"].setScript(nil)
			if _, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("y"))); err != nil {
				t.Fatalf("send after recovery: %v", err)
			}
			p.Close()
			check()
		})
	}
}

func TestContextDeadlineBoundsTheSend(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action { return action{silent: true} })
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithSendTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := p.Send(ctx, producer.NewMessage("T", []byte("x")))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
	if got := len(fc.sendsTo("a")); got != 1 {
		t.Fatalf("%d attempts after the caller's deadline, want 1", got)
	}
	p.Close()
	check()
}

func TestNameServerProblems(t *testing.T) {
	dead := portres.Hold(t)                                     // a port nobody listens on
	mute := startFake(t, func(*fakeConn, *remoting.Command) {}) // accepts, never answers
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	tests := []struct {
		name    string
		namesrv []string
		want    []error // nil: the send succeeds
	}{
		{"unreachable", []string{dead}, []error{mqclient.ErrNameServerUnreachable}},
		{"mute", []string{mute.addr()}, []error{mqclient.ErrNameServerUnreachable, context.DeadlineExceeded}},
		{"unreachable and mute", []string{dead, mute.addr()}, []error{mqclient.ErrNameServerUnreachable}},
		{"failover to the third", []string{dead, mute.addr(), fc.ns.addr()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := goroutineCheck(t)
			p := newProducer(t, tt.namesrv)
			_, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x")))
			if tt.want == nil && err != nil {
				t.Fatalf("send: %v", err)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Fatalf("err %v, want it to match %v", err, w)
				}
			}
			p.Close()
			check()
		})
	}
}

func TestEmptyNameServerList(t *testing.T) {
	check := goroutineCheck(t)
	for _, ns := range [][]string{nil, {""}, {" ", ""}} {
		p, err := producer.New(producer.WithNameServers(ns...))
		if !errors.Is(err, mqclient.ErrNoNameServer) || p != nil {
			t.Fatalf("New with name servers %q: %v, want ErrNoNameServer", ns, err)
		}
	}
	if _, err := producer.New(producer.WithNameServers("no-port")); err == nil {
		t.Fatal("New accepted a name server without a port")
	}
	check()
}

func TestTopicWithoutWritableQueue(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("RO", routeSpec{brokers: []string{"a"}, queues: 4, perm: 4})
	fc.setRoute("NONE", routeSpec{brokers: []string{"a"}, queues: 0, perm: 6})
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()})
	for _, topic := range []string{"RO", "NONE"} {
		_, err := p.Send(testCtx(t), producer.NewMessage(topic, []byte("x")))
		if !errors.Is(err, mqclient.ErrNoWritableQueue) {
			t.Fatalf("send to %s: %v, want ErrNoWritableQueue", topic, err)
		}
	}
	if n := len(fc.sendsTo("a")); n != 0 {
		t.Fatalf("broker got %d sends", n)
	}
	p.Close()
	check()
}

func TestAutoCreateBorrowsTBW102(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute(mqclient.AutoCreateTopic, routeSpec{brokers: []string{"a"}, queues: 8, perm: 7})
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()})
	seen := map[string]bool{}
	for range 12 {
		res, err := p.Send(testCtx(t), producer.NewMessage("fresh", []byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		seen[res.Queue.String()] = true
	}
	if len(seen) != 4 {
		t.Fatalf("queues used %v, want the 4 of the capped TBW102 route", seen)
	}
	for _, req := range fc.sendsTo("a") {
		if req.Field("b") != "fresh" || req.Field("c") != "TBW102" || req.Field("d") != "4" {
			t.Fatalf("send header %v, want topic fresh created from TBW102 with 4 queues", req.ExtFields)
		}
	}
	p.Close()
	check()
}

func TestFaultToleranceIsolatesAFailedBroker(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("fault tolerance ", on), func(t *testing.T) {
			fc := newFakeCluster(t, "a", "b")
			fc.setRoute("T", routeSpec{brokers: []string{"a", "b"}, queues: 2, perm: 6})
			fc.brokers["a"].setScript(func(n int, _ *remoting.Command) action {
				if n == 1 {
					return action{code: remoting.SystemBusy, remark: "once"}
				}
				return action{}
			})
			check := goroutineCheck(t)
			p := newProducer(t, []string{fc.ns.addr()}, producer.WithFaultTolerance(on))
			ctx := testCtx(t)
			for len(fc.sendsTo("a")) == 0 { // until a has failed once
				if _, err := p.Send(ctx, producer.NewMessage("T", []byte("x"))); err != nil {
					t.Fatal(err)
				}
			}
			for range 20 {
				if _, err := p.Send(ctx, producer.NewMessage("T", []byte("y"))); err != nil {
					t.Fatal(err)
				}
			}
			toA := len(fc.sendsTo("a"))
			if on && toA != 1 {
				t.Fatalf("broker a got %d sends, want only the failed one: it is isolated for 30 s", toA)
			}
			if !on && toA < 5 {
				t.Fatalf("broker a got %d sends without fault tolerance, want about half of 20", toA)
			}
			p.Close()
			check()
		})
	}
}

func TestRouteRefreshedAtOnceAfterAFailure(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action { return action{code: remoting.SystemError} })
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithRetries(0))
	if _, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x"))); err == nil {
		t.Fatal("send succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(fc.ns.requests(remoting.GetRouteInfoByTopic)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the route was not looked up again after the failed send")
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Close()
	check()
}

func TestUnreachableBroker(t *testing.T) {
	fc := newFakeCluster(t, "a", "b")
	fc.setRoute("T", routeSpec{brokers: []string{"a", "b"}, queues: 1, perm: 6})
	fc.brokers["a"].srv.stop() // connection refused from now on
	check := goroutineCheck(t)
	var hooks hookLog
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithHooks(hooks.hook()), producer.WithFaultTolerance(true))
	ctx := testCtx(t)
	for range 6 {
		res, err := p.Send(ctx, producer.NewMessage("T", []byte("x")))
		if err != nil || res.Queue.Broker != "b" {
			t.Fatalf("send: %+v, %v", res, err)
		}
	}
	p.Close()
	check()
	dialFailures := 0
	for _, a := range hooks.after {
		if a.Queue.Broker == "a" {
			if a.Err == nil || !strings.Contains(a.Err.Error(), "dial") {
				t.Fatalf("after hook of an attempt to the dead broker: %+v", a)
			}
			dialFailures++
		}
	}
	if dialFailures != 1 {
		t.Fatalf("%d attempts to the dead broker, want 1: fault tolerance isolates it after the first", dialFailures)
	}
	if len(hooks.before) != len(hooks.after) {
		t.Fatalf("%d before hooks, %d after", len(hooks.before), len(hooks.after))
	}
}
