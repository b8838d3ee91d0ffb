package broker_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/storage/message"
)

// openBroker opens a broker API over a pipeline on a temporary store (no
// name servers: route waits end at once).
func openBroker(t *testing.T) *broker.Broker {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.Logger = t.TempDir(), "127.0.0.1:0", zerolog.Nop()
	pipe, err := pipeline.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pipe.Close() })
	b := broker.New(pipe)
	adv := netip.MustParseAddrPort("127.0.0.1:10911")
	b.Serve(adv, message.NewUniqKeyGenerator(adv.Addr(), 1, 1))
	return b
}

// call waits for one API answer (5 s at most).
func call[T any](t *testing.T, f func(done func(T, *broker.Error))) (T, *broker.Error) {
	t.Helper()
	type answer struct {
		v   T
		err *broker.Error
	}
	ch := make(chan answer, 1)
	f(func(v T, err *broker.Error) { ch <- answer{v, err} })
	select {
	case a := <-ch:
		return a.v, a.err
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s")
		var zero T
		return zero, nil
	}
}

// callDone is call for a call that answers its outcome only.
func callDone(t *testing.T, f func(done func(*broker.Error))) *broker.Error {
	t.Helper()
	_, err := call(t, func(done func(struct{}, *broker.Error)) { f(func(e *broker.Error) { done(struct{}{}, e) }) })
	return err
}

// adminOnly lets account "admin" do everything and "reader" read topic
// "orders" only.
type adminOnly struct{}

func (adminOnly) Authorize(c broker.Caller, n broker.Need) *broker.Error {
	switch {
	case c.Account == "admin":
		return nil
	case c.Account == "reader" && n.Kind == broker.KindTopic && n.Name == "orders" && n.Perm == broker.Sub:
		return nil
	}
	return broker.Errorf(broker.Forbidden, "%s may not", c.Account)
}

func TestTopicAdministration(t *testing.T) {
	b := openBroker(t)
	b.SetAuthorizer(adminOnly{})
	admin := broker.Caller{Protocol: broker.Console, Account: "admin"}
	reader := broker.Caller{Protocol: broker.Console, Account: "reader"}
	spec := broker.TopicSpec{Name: "orders", ReadQueues: 4, WriteQueues: 4, Perm: 6}

	if err := callDone(t, func(d func(*broker.Error)) { b.PutTopic(reader, spec, d) }); broker.StatusOf(err) != broker.Forbidden {
		t.Fatalf("a reader created a topic: %v", err)
	}
	if _, ok := b.Pipeline().Topics().Get("orders"); ok {
		t.Fatal("the refused creation changed the table")
	}
	for _, bad := range []broker.TopicSpec{
		{Name: "bad name!", ReadQueues: 1, WriteQueues: 1},
		{Name: "orders", ReadQueues: 0, WriteQueues: 1},
		{Name: "orders", ReadQueues: 1, WriteQueues: 2000},
		{Name: "TBW102", ReadQueues: 1, WriteQueues: 1},
		{Name: "orders", ReadQueues: 1, WriteQueues: 1, Attributes: "+message.type=MIXED"},
	} {
		if err := callDone(t, func(d func(*broker.Error)) { b.PutTopic(admin, bad, d) }); broker.StatusOf(err) != broker.BadRequest {
			t.Errorf("%+v: got %v, want BAD_REQUEST", bad, err)
		}
	}
	if err := callDone(t, func(d func(*broker.Error)) { b.PutTopic(admin, spec, d) }); err != nil {
		t.Fatal(err)
	}
	cfg, ok := b.Pipeline().Topics().Get("orders")
	if !ok || cfg.ReadQueueNums != 4 || cfg.TopicFilterType != "SINGLE_TAG" {
		t.Fatalf("stored %+v (%v)", cfg, ok)
	}
	st, err := call(t, func(d func(*broker.TopicStats, *broker.Error)) { b.TopicStats(reader, "orders", d) })
	if err != nil || len(st.Queues) != 4 {
		t.Fatalf("stats %+v, %v", st, err)
	}
	if _, err := call(t, func(d func(*broker.TopicStats, *broker.Error)) { b.TopicStats(reader, "prices", d) }); broker.StatusOf(err) != broker.Forbidden {
		t.Fatalf("a reader read another topic's stats: %v", err)
	}
	if _, err := call(t, func(d func(*broker.TopicStats, *broker.Error)) { b.TopicStats(admin, "prices", d) }); broker.StatusOf(err) != broker.TopicNotFound {
		t.Fatalf("stats of a missing topic: %v", err)
	}
	if err := callDone(t, func(d func(*broker.Error)) { b.DeleteTopic(reader, "orders", d) }); broker.StatusOf(err) != broker.Forbidden {
		t.Fatalf("a reader deleted a topic: %v", err)
	}
	if err := callDone(t, func(d func(*broker.Error)) { b.DeleteTopic(admin, "orders", d) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Pipeline().Topics().Get("orders"); ok {
		t.Fatal("the topic outlived its deletion")
	}
	// Batch: the first bad entry refuses them all, naming it.
	err = callDone(t, func(d func(*broker.Error)) {
		b.PutTopics(admin, []broker.TopicSpec{spec, {Name: "x", ReadQueues: 0, WriteQueues: 1}}, d)
	})
	if broker.StatusOf(err) != broker.BadRequest || err.Remark[:len("topic 1 (x)")] != "topic 1 (x)" {
		t.Fatalf("batch with a bad entry: %v", err)
	}
	if _, ok := b.Pipeline().Topics().Get("orders"); ok {
		t.Fatal("a refused batch stored its good entry")
	}
}
