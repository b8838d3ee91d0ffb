package producer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/client/producer"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// notMaster is how a replica (or a fenced master) answers a send
// (netloop/router, sendFailure).
var notMaster = action{code: remoting.ServiceNotAvailable,
	remark: "[NOT_MASTER] service not available now: the broker is not its group's master (role slave): messages are put to the master, the message was not stored"}

// moveGroupAfter makes the name server route group "a" to the fake broker
// "a2" after d, as after a failover.
func moveGroupAfter(fc *fakeCluster, d time.Duration) {
	time.AfterFunc(d, func() {
		fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6, servedBy: map[string]string{"a": "a2"}})
	})
}

func TestNotMasterWaitsForTheNewMaster(t *testing.T) {
	for _, async := range []bool{false, true} {
		name := map[bool]string{false: "sync", true: "async"}[async]
		t.Run(name, func(t *testing.T) {
			fc := newFakeCluster(t, "a", "a2")
			fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
			fc.brokers["a"].setScript(func(int, *remoting.Command) action { return notMaster })
			p := newProducer(t, []string{fc.ns.addr()}, producer.WithSendTimeout(2*time.Second), producer.WithRetries(1))
			start := time.Now()
			moveGroupAfter(fc, 300*time.Millisecond)
			res, err := sendOne(t, p, async)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("send after a failover: %v", err)
			}
			if res.Queue.Broker != "a" || len(fc.sendsTo("a2")) != 1 {
				t.Fatalf("result %+v, %d sends to the new master", res, len(fc.sendsTo("a2")))
			}
			if n := len(fc.sendsTo("a")); n != 1 {
				t.Fatalf("%d sends to the old master, want 1: the producer waits for the new route", n)
			}
			if took < 250*time.Millisecond || took > 1500*time.Millisecond {
				t.Fatalf("the send took %v, want about the 300 ms the route took to move", took)
			}
		})
	}
}

func TestLostConnectionWaitsForTheNewMaster(t *testing.T) {
	fc := newFakeCluster(t, "a", "a2")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithSendTimeout(2*time.Second), producer.WithRetries(1))
	if _, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x"))); err != nil {
		t.Fatalf("first send: %v", err)
	}
	fc.brokers["a"].srv.stop() // the master dies: connection closed, then refused
	moveGroupAfter(fc, 300*time.Millisecond)
	res, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("y")))
	if err != nil {
		t.Fatalf("send after the master died: %v", err)
	}
	if len(fc.sendsTo("a2")) != 1 || res.Queue.Broker != "a" {
		t.Fatalf("result %+v, %d sends to the new master", res, len(fc.sendsTo("a2")))
	}
}

func TestNotMasterWaitIsBoundedBySendTimeout(t *testing.T) {
	fc := newFakeCluster(t, "a")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action { return notMaster })
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithSendTimeout(400*time.Millisecond), producer.WithRetries(1))
	start := time.Now()
	_, err := p.Send(testCtx(t), producer.NewMessage("T", []byte("x")))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "NOT_MASTER") {
		t.Fatalf("send to a group without master: %v", err)
	}
	if n := len(fc.sendsTo("a")); n != 2 {
		t.Fatalf("%d attempts, want 2 (1 + retries)", n)
	}
	if took < 350*time.Millisecond || took > 2*time.Second {
		t.Fatalf("the send took %v, want about one send timeout (400 ms) of waiting", took)
	}
}

// sendOne sends one message to T, sync or async.
func sendOne(t *testing.T, p *producer.Producer, async bool) (*producer.SendResult, error) {
	t.Helper()
	m := producer.NewMessage("T", []byte("x"))
	if !async {
		return p.Send(testCtx(t), m)
	}
	type out struct {
		res *producer.SendResult
		err error
	}
	ch := make(chan out, 1)
	if err := p.SendAsync(testCtx(t), m, func(r *producer.SendResult, err error) { ch <- out{r, err} }); err != nil {
		return nil, err
	}
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(10 * time.Second):
		t.Fatal("no async answer in 10 s")
		return nil, nil
	}
}

// TestConcurrentSendsThroughAFailover: 20 sync and 20 async sends are under
// way while the group has no master (the old one answers NOT_MASTER, then
// the route lists only a replica for 200 ms, then the new master): every
// send succeeds on the new master; the route without a master made none
// fail at once.
func TestConcurrentSendsThroughAFailover(t *testing.T) {
	fc := newFakeCluster(t, "a", "a2")
	fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6})
	fc.brokers["a"].setScript(func(int, *remoting.Command) action { return notMaster })
	p := newProducer(t, []string{fc.ns.addr()}, producer.WithSendTimeout(2*time.Second), producer.WithRetries(1))
	time.AfterFunc(100*time.Millisecond, func() {
		fc.setRoute("T", routeSpec{brokers: []string{"a"}, queues: 1, perm: 6, noMaster: true, servedBy: map[string]string{"a": "a2"}})
	})
	moveGroupAfter(fc, 300*time.Millisecond)
	errs := make(chan error, 40)
	start := time.Now()
	for i := range 40 {
		go func() {
			time.Sleep(time.Duration(i) * 5 * time.Millisecond) // spread over the whole window
			res, err := sendOne(t, p, i%2 == 1)
			if err == nil && len(fc.sendsTo("a2")) == 0 {
				err = fmt.Errorf("result %+v but no send reached the new master", res)
			}
			if err != nil {
				err = fmt.Errorf("send %d (async %v), ended %v after the start: %w", i, i%2 == 1, time.Since(start), err)
			}
			errs <- err
		}()
	}
	for range 40 {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a send did not end in 10 s")
		}
	}
	if n := len(fc.sendsTo("a2")); n != 40 {
		t.Fatalf("%d sends on the new master, want 40", n)
	}
}
