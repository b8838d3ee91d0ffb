package broker

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/pop"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/storage/message"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// newTestBroker opens a pipeline in a temporary directory and serves its
// API.
func newTestBroker(t *testing.T, mutate func(*pipeline.Config)) *Broker {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.Logger = t.TempDir(), "127.0.0.1:0", zerolog.Nop()
	if mutate != nil {
		mutate(&cfg)
	}
	pipe, err := pipeline.Open(cfg)
	if err != nil {
		t.Fatalf("open pipeline: %v", err)
	}
	t.Cleanup(func() { _ = pipe.Close() })
	b := New(pipe)
	adv := netip.MustParseAddrPort("127.0.0.1:10911")
	b.Serve(adv, message.NewUniqKeyGenerator(adv.Addr(), 1, 1))
	return b
}

// createTopic creates topic through the topics stage.
func createTopic(t *testing.T, b *Broker, topic string) {
	t.Helper()
	done := make(chan error, 1)
	b.Pipeline().Stage(topics.StageName).Send(&topics.Ensure{Config: meta.NewTopicConfig(topic, 2),
		Done: func(_ meta.TopicConfig, err error) { done <- err }})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("create topic %s: no answer within 10 s", topic)
	}
	if _, ok := b.Pipeline().Topics().Get(topic); !ok {
		t.Fatalf("topic %s created but not in the view", topic)
	}
}

// call runs an API call and waits (10 s at most) for its answer.
func call[T any](t *testing.T, run func(done func(T, *Error))) (T, *Error) {
	t.Helper()
	type answer struct {
		v   T
		err *Error
	}
	got := make(chan answer, 1)
	run(func(v T, err *Error) { got <- answer{v, err} })
	select {
	case a := <-got:
		return a.v, a.err
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not answer within 10 s")
	}
	var zero T
	return zero, nil
}

// wantStatus fails unless err has status st.
func wantStatus(t *testing.T, what string, err *Error, st Status) {
	t.Helper()
	if StatusOf(err) != st {
		t.Errorf("%s: %v, want %s", what, err, st)
	}
}

var (
	viaRemoting = Caller{Protocol: Remoting}
	viaGRPC     = Caller{Protocol: GRPC}
)

// The rules of a pop, once for every protocol: the topic, the batch size,
// the invisible time (the gRPC bounds are the proxy's), the group.
func TestPopRules(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, func(c *pipeline.Config) { c.AutoCreateGroup = false })
	createTopic(t, b, "orders")
	pop := func(c Caller, r PopRequest) (*PopResult, *Error) {
		return call(t, func(done func(*PopResult, *Error)) { b.Pop(c, &r, done) })
	}
	ok := PopRequest{Group: "cg", Topic: "orders", QueueID: -1, MaxNums: 8, Invisible: 30 * time.Second}
	r := ok
	r.Topic = "none"
	_, err := pop(viaRemoting, r)
	wantStatus(t, "an unknown topic", err, TopicNotFound)
	for _, n := range []int32{0, MaxPopNums + 1} {
		r = ok
		r.MaxNums = n
		_, err = pop(viaRemoting, r)
		wantStatus(t, fmt.Sprintf("a batch of %d", n), err, BadRequest)
	}
	r = ok
	r.Invisible = 5 * time.Second
	_, err = pop(viaGRPC, r)
	wantStatus(t, "5 s invisible over gRPC", err, BadInvisibleTime)
	r.Invisible = 13 * time.Hour
	_, err = pop(viaGRPC, r)
	wantStatus(t, "13 h invisible over gRPC", err, BadInvisibleTime)
	r.Invisible = -time.Millisecond
	_, err = pop(viaRemoting, r)
	wantStatus(t, "a negative invisible time", err, BadInvisibleTime)
	// Auto-creation is off: the group must exist.
	r = ok
	r.Invisible = 5 * time.Second // legal over remoting
	_, err = pop(viaRemoting, r)
	wantStatus(t, "an unknown group without auto-creation", err, GroupNotFound)

	// With auto-creation, an empty topic answers NoMessage at once.
	b2 := newTestBroker(t, nil)
	createTopic(t, b2, "orders")
	res, err := call(t, func(done func(*PopResult, *Error)) { b2.Pop(viaRemoting, &r, done) })
	if err != nil || res.Empty != NoMessage || len(res.Messages) != 0 {
		t.Fatalf("a pop of an empty topic: %+v %v, want NoMessage", res, err)
	}
}

// An ack of N handles is one request to the POP engine, which answers
// each: here none is live, so each entry is refused HandleExpired.
func TestAckIsOneRequest(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	createTopic(t, b, "orders")
	eng := b.Pipeline().Pop().Counters()
	before := eng.BatchAcks.Load()
	req := &AckRequest{Group: "cg", Topic: "orders"}
	for i := range 5 {
		req.Entries = append(req.Entries, AckEntry{Handle: pop.Handle{PopTime: 1, InvisibleTime: 10000, QueueID: int32(i % 2), Offset: int64(i)}})
	}
	res, err := call(t, func(done func(*AckResult, *Error)) { b.Ack(viaGRPC, req, done) })
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	if n := eng.BatchAcks.Load() - before; n != 1 {
		t.Fatalf("an ack of 5 entries made %d requests to the engine, want 1", n)
	}
	if res.Acked != 0 || len(res.Refused) != 5 {
		t.Fatalf("ack of 5 dead handles: %+v", res)
	}
	for _, e := range res.Refused {
		wantStatus(t, "a dead handle", e, HandleExpired)
	}
	req.Topic = "none"
	_, err = call(t, func(done func(*AckResult, *Error)) { b.Ack(viaGRPC, req, done) })
	wantStatus(t, "an ack of an unknown topic", err, TopicNotFound)

	_, err = call(t, func(done func(pop.Handle, *Error)) {
		b.ChangeInvisible(viaGRPC, &ChangeRequest{Group: "cg", Topic: "orders", Handle: req.Entries[0].Handle, Invisible: 13 * time.Hour}, done)
	})
	wantStatus(t, "a change to 13 h over gRPC", err, BadInvisibleTime)
	_, err = call(t, func(done func(pop.Handle, *Error)) {
		b.ChangeInvisible(viaGRPC, &ChangeRequest{Group: "cg", Topic: "orders", Handle: req.Entries[0].Handle}, done)
	})
	wantStatus(t, "a change of a dead handle", err, HandleExpired)
}

// A replica refuses a pop before anything is delivered or counted, naming
// its master.
func TestReplicaRefusesPop(t *testing.T) {
	holder := role.NewHolder(role.State{Kind: role.Replica, BrokerID: 2, MasterAddr: "192.0.2.1:10911"})
	b := newTestBroker(t, func(c *pipeline.Config) {
		c.Replication, c.HAListen, c.Role, c.HASecret = pipeline.ReplicationController, "127.0.0.1:0", holder, []byte("0123456789abcdef0123456789abcdef")
	})
	_, err := call(t, func(done func(*PopResult, *Error)) {
		b.Pop(Caller{Protocol: GRPC}, &PopRequest{Group: "g", Topic: "t", QueueID: -1, MaxNums: 1, Invisible: 30 * time.Second}, done)
	})
	if StatusOf(err) != NotMaster || !strings.Contains(err.Remark, "192.0.2.1:10911") {
		t.Fatalf("pop on a replica: %v", err)
	}
	if n := b.Pipeline().Pop().Inflight(); n != 0 {
		t.Fatalf("the refused pop left %d deliveries in flight", n)
	}
}
