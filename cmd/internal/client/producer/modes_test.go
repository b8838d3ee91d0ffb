package producer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/mqclient"
	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

func TestAsyncInflightIsBounded(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 4, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action { return action{delay: 20 * time.Millisecond} })
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithMaxInflight(3, 1<<20))
	const n = 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	ids := map[string]bool{}
	wg.Add(n)
	for i := range n {
		err := p.SendAsync(testCtx(t), producer.NewMessage("T", []byte(fmt.Sprint(i))), func(res *producer.SendResult, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ids[res.MsgID] = true
		})
		if err != nil {
			t.Fatalf("async send %d: %v", i, err)
		}
		if c, _ := p.InflightAsync(); c > 3 {
			t.Fatalf("%d async sends in flight, bound is 3", c)
		}
	}
	wg.Wait()
	if len(errs) > 0 || len(ids) != n {
		t.Fatalf("%d distinct results, errors %v", len(ids), errs)
	}
	if m := fc.brokers["a"].maxOutstanding.Load(); m > 3 || m < 1 {
		t.Fatalf("the broker saw %d sends outstanding at once, bound is 3", m)
	}
	p.Close()
	check()
}

func TestAsyncBackPressureHasADeadline(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action { return action{silent: true} })
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithMaxInflight(2, 1<<20),
		producer.WithSendTimeout(300*time.Millisecond), producer.WithRetries(0))
	results := make(chan error, 2)
	for range 2 {
		if err := p.SendAsync(context.Background(), producer.NewMessage("T", []byte("x")), func(_ *producer.SendResult, err error) {
			results <- err
		}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := p.SendAsync(ctx, producer.NewMessage("T", []byte("x")), func(*producer.SendResult, error) {
		t.Error("callback of a refused send ran")
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third async send: %v, want DeadlineExceeded waiting for a permit", err)
	}
	for range 2 {
		if err := <-results; !errors.Is(err, remoting.ErrTimeout) {
			t.Fatalf("callback error %v, want ErrTimeout", err)
		}
	}
	if c, b := p.InflightAsync(); c != 0 || b != 0 {
		t.Fatalf("%d permits (%d bytes) still taken", c, b)
	}
	p.Close()
	check()
}

func TestAsyncRetriesOnAWorker(t *testing.T) {
	fc := newFakeCluster(t, "a", "b")
	fc.setRoute("T", routeSpec{brokers: []string{"a", "b"}, queues: 1, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action { return action{code: remoting.SystemBusy} })
	fc.brokers["b"].setScript(func(int, *remoting.Command) action { return action{code: remoting.SystemBusy} })
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithRetries(3))
	done := make(chan error, 1)
	if err := p.SendAsync(testCtx(t), producer.NewMessage("T", []byte("x")), func(_ *producer.SendResult, err error) {
		done <- err
	}); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var be *producer.BrokerError
	if !errors.As(err, &be) || be.Code != remoting.SystemBusy || !strings.Contains(err.Error(), "failed 4 times") {
		t.Fatalf("callback error %v, want 4 SYSTEM_BUSY attempts", err)
	}
	a, b := len(fc.sendsTo("a")), len(fc.sendsTo("b"))
	if a != 2 || b != 2 {
		t.Fatalf("attempts a=%d b=%d, want them alternating 2/2", a, b)
	}
	p.Close()
	check()
}

func TestOnewayCarriesTheFlag(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()})
	if err := p.SendOneway(testCtx(t), producer.NewMessage("T", []byte("fire"))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(fc.sendsTo("a")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	sends := fc.sendsTo("a")
	if len(sends) != 1 || !sends[0].IsOneway() || string(sends[0].Body) != "fire" {
		t.Fatalf("oneway sends seen: %+v", sends)
	}
	p.Close()
	check()
}

func TestHeartbeatsAndUnregister(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	check := goroutineCheck(t)
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithGroup("pg-hb"),
		producer.WithClientConfig(func(c *mqclient.Config) { c.HeartbeatInterval = 20 * time.Millisecond }))
	if _, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(fc.brokers["a"].srv.requests(remoting.HeartBeat)) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("fewer than 3 heartbeats in 5 s with a 20 ms interval")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var hb struct {
		ClientID        string `json:"clientID"`
		ProducerDataSet []struct {
			GroupName string `json:"groupName"`
		} `json:"producerDataSet"`
	}
	if err := json.Unmarshal(fc.brokers["a"].srv.requests(remoting.HeartBeat)[0].Body, &hb); err != nil {
		t.Fatal(err)
	}
	if hb.ClientID != p.ClientID() || len(hb.ProducerDataSet) != 1 || hb.ProducerDataSet[0].GroupName != "pg-hb" {
		t.Fatalf("heartbeat %+v, want client %s and group pg-hb", hb, p.ClientID())
	}
	p.Close()
	un := fc.brokers["a"].srv.requests(remoting.UnregisterClient)
	if len(un) != 1 || un[0].Field("producerGroup") != "pg-hb" || un[0].Field("clientID") != p.ClientID() {
		t.Fatalf("unregister requests %+v", un)
	}
	check()
}

func TestHeaderEncodings(t *testing.T) {
	for _, tt := range []struct {
		opts []producer.Option
		want remoting.SerializeType
	}{
		{nil, remoting.SerializeRocketMQ},
		{[]producer.Option{producer.WithJSONHeaders()}, remoting.SerializeJSON},
	} {
		t.Run(tt.want.String(), func(t *testing.T) {
			fc := newFakeCluster(t, "a")
			fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
			p := newProducer(t, []string{fc.ns.addr()}, tt.opts...)
			if _, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x"))); err != nil {
				t.Fatal(err)
			}
			for _, srv := range []*fakeServer{fc.ns, fc.brokers["a"].srv} {
				for _, req := range srv.requests(remoting.GetRouteInfoByTopic, remoting.SendMessageV2, remoting.HeartBeat) {
					if req.Serialize != tt.want || req.Language != "GO" {
						t.Fatalf("request code %d in %v from %s, want %v", req.Code, req.Serialize, req.Language, tt.want)
					}
				}
			}
		})
	}
}

func TestSharedClientInstance(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	other := newFakeCluster(t)
	check := goroutineCheck(t)
	ns := []string{fc.ns.addr()}
	p1 := newProducer(t, ns, producer.WithInstanceName("shared"), producer.WithGroup("g1"))
	p2 := newProducer(t, ns, producer.WithInstanceName("shared"), producer.WithGroup("g2"))
	if p1.ClientID() != p2.ClientID() || !strings.HasSuffix(p1.ClientID(), "@shared") {
		t.Fatalf("client ids %s and %s, want one shared IP@shared", p1.ClientID(), p2.ClientID())
	}
	if _, err := producer.New(producer.WithNameServers(ns...), producer.WithInstanceName("shared"), producer.WithGroup("g1")); !errors.Is(err, mqclient.ErrDuplicateGroup) {
		t.Fatalf("second producer of group g1: %v, want ErrDuplicateGroup", err)
	}
	if _, err := producer.New(producer.WithNameServers(other.ns.addr()), producer.WithInstanceName("shared"), producer.WithGroup("g3")); !errors.Is(err, mqclient.ErrConfigConflict) {
		t.Fatalf("producer with other name servers: %v, want ErrConfigConflict", err)
	}
	for i, p := range []*producer.Producer{p1, p2} {
		if _, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x"))); err != nil {
			t.Fatalf("producer %d: %v", i+1, err)
		}
	}
	fc.brokers["a"].srv.mu.Lock()
	conns := len(fc.brokers["a"].srv.conns)
	fc.brokers["a"].srv.mu.Unlock()
	if conns != 1 || len(fc.ns.requests(remoting.GetRouteInfoByTopic)) != 1 {
		t.Fatalf("%d broker connections and %d route lookups for two producers of one instance, want 1 and 1",
			conns, len(fc.ns.requests(remoting.GetRouteInfoByTopic)))
	}
	p1.Close()
	if _, err := p2.Send(testCtx(t), producer.NewMessage("T", []byte("x"))); err != nil {
		t.Fatalf("the second producer after the first closed: %v", err)
	}
	if _, err := p1.Send(testCtx(t), producer.NewMessage("T", []byte("x"))); !errors.Is(err, producer.ErrClosed) {
		t.Fatalf("send on a closed producer: %v", err)
	}
	p2.Close()
	check()
}

func TestBatchRequest(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 2, perm: 6})
	p := newProducer(t, []string{fc.ns.addr()})
	big := bytes.Repeat([]byte("z"), 8<<10) // not compressed inside a batch
	msgs := []*producer.Message{
		producer.NewMessage("T", []byte("one")).WithTag("t1"),
		producer.NewMessage("T", big).WithKeys("k1", "k2"),
		producer.NewMessage("T", []byte("three")).WithProperty("color", "red"),
	}
	res, err := p.SendBatch(testCtx(t), msgs...)
	if err != nil {
		t.Fatal(err)
	}
	sends := fc.sendsTo("a")
	if len(sends) != 1 || sends[0].Code != remoting.SendBatchMessage || sends[0].Field("m") != "true" || sends[0].Field("f") != "0" {
		t.Fatalf("batch request %+v", sends)
	}
	entries, err := message.DecodeBatch(sends[0].Body)
	if err != nil || len(entries) != 3 {
		t.Fatalf("batch body: %d entries, %v", len(entries), err)
	}
	ids := res.MsgIDs()
	if len(ids) != 3 {
		t.Fatalf("result ids %q", res.MsgID)
	}
	for i, e := range entries {
		props := message.DecodeProperties(e.Properties)
		if !bytes.Equal(e.Body, msgs[i].Body) || props[message.PropUniqKey] != ids[i] {
			t.Fatalf("entry %d: body %d bytes, UNIQ_KEY %q, want %q", i, len(e.Body), props[message.PropUniqKey], ids[i])
		}
		for k, v := range msgs[i].Properties() {
			if props[k] != v {
				t.Fatalf("entry %d: property %s=%q, want %q", i, k, props[k], v)
			}
		}
	}
}

func TestSelectors(t *testing.T) {
	fc := newFakeCluster(t, "a", "b")
	fc.setRoute("T", routeSpec{brokers: []string{"a", "b"}, queues: 4, perm: 6})
	ctx := testCtx(t)
	t.Run("hash by key", func(t *testing.T) {
		p := newProducer(t, []string{fc.ns.addr()}, producer.WithSelector(producer.HashByKey()))
		byKey := map[string]string{}
		for i := range 40 {
			key := fmt.Sprint("order-", i%5)
			res, err := p.Send(ctx, producer.NewMessage("T", []byte("x")).WithShardingKey(key))
			if err != nil {
				t.Fatal(err)
			}
			if q, ok := byKey[key]; ok && q != res.Queue.String() {
				t.Fatalf("key %s went to %s and %s", key, q, res.Queue)
			}
			byKey[key] = res.Queue.String()
		}
	})
	t.Run("caller chosen", func(t *testing.T) {
		var seen []int
		p := newProducer(t, []string{fc.ns.addr()}, producer.WithSelector(producer.SelectorFunc(
			func(_ *producer.Message, qs []producer.Queue, _ string) producer.Queue {
				seen = append(seen, len(qs))
				return qs[len(qs)-1]
			})))
		res, err := p.Send(ctx, producer.NewMessage("T", []byte("x")))
		if err != nil || res.Queue.Broker != "b" || res.Queue.ID != 3 || len(seen) != 1 || seen[0] != 8 {
			t.Fatalf("result %+v, err %v, queue counts seen %v", res, err, seen)
		}
	})
	t.Run("a queue not in the route", func(t *testing.T) {
		p := newProducer(t, []string{fc.ns.addr()}, producer.WithSelector(producer.SelectorFunc(
			func(*producer.Message, []producer.Queue, string) producer.Queue {
				return producer.Queue{Topic: "T", Broker: "zz", ID: 0}
			})))
		if _, err := p.Send(ctx, producer.NewMessage("T", []byte("x"))); err == nil || !strings.Contains(err.Error(), "not in the route") {
			t.Fatalf("err %v", err)
		}
	})
}
