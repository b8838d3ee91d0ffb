package clients

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
)

func TestParseLockBatch(t *testing.T) {
	tests := []struct {
		name string
		body string
		want LockBatchBody
		err  bool
	}{
		{name: "go client", body: `{"consumerGroup":"G","clientId":"10.0.0.1@1","mqSet":[{"topic":"T","brokerName":"b","queueId":3}]}`,
			want: LockBatchBody{ConsumerGroup: "G", ClientID: "10.0.0.1@1", MQSet: []MessageQueue{{"T", "b", 3}}}},
		{name: "java client", body: `{"clientId":"c@1","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"},{"brokerName":"b","queueId":1,"topic":"T"}],"onlyThisBroker":true}`,
			want: LockBatchBody{ConsumerGroup: "G", ClientID: "c@1", MQSet: []MessageQueue{{"T", "b", 0}, {"T", "b", 1}}, OnlyThisBroker: true}},
		{name: "empty set", body: `{"consumerGroup":"G","clientId":"c","mqSet":[]}`,
			want: LockBatchBody{ConsumerGroup: "G", ClientID: "c", MQSet: []MessageQueue{}}},
		{name: "no body", body: ``, err: true},
		{name: "not json", body: `lock please`, err: true},
		{name: "no group", body: `{"clientId":"c","mqSet":[]}`, err: true},
		{name: "no client", body: `{"consumerGroup":"G","mqSet":[]}`, err: true},
		{name: "queue without topic", body: `{"consumerGroup":"G","clientId":"c","mqSet":[{"brokerName":"b","queueId":0}]}`, err: true},
		{name: "negative queue", body: `{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","queueId":-1}]}`, err: true},
		{name: "queue id too big", body: `{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","queueId":4294967296}]}`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLockBatch([]byte(tt.body))
			if tt.err {
				if err == nil {
					t.Fatalf("ParseLockBatch(%s) = %+v, want an error", tt.body, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("ParseLockBatch = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFormatLockBatchResponse(t *testing.T) {
	if got := string(FormatLockBatchResponse(nil)); got != `{"lockOKMQSet":[]}` {
		t.Errorf("empty answer = %s", got)
	}
	got := string(FormatLockBatchResponse([]MessageQueue{{"T", "b", 2}}))
	if want := `{"lockOKMQSet":[{"topic":"T","brokerName":"b","queueId":2}]}`; got != want {
		t.Errorf("answer = %s, want %s", got, want)
	}
}

// clock is a settable time source for the lock table.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type lockRig struct {
	s   *stage.Stage
	clk *clock
}

func newLockRig(t *testing.T) *lockRig {
	t.Helper()
	sys := stage.NewSystem(zerolog.Nop())
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	var view View
	s, err := stage.NewRegistry(prometheus.NewRegistry()).Spawn(sys, supervisor.New(supervisor.Policy{}), StageName,
		Producer(Options{View: &view, ExpireAfter: time.Hour, LockExpiry: time.Minute, Now: clk.Now}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		sys.Shutdown()
	})
	return &lockRig{s: s, clk: clk}
}

func await[T any](t *testing.T, what string, send func(reply func(T))) T {
	t.Helper()
	ch := make(chan T, 1)
	send(func(v T) { ch <- v })
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("%s not answered", what)
		var zero T
		return zero
	}
}

func qs(ids ...int32) []MessageQueue {
	out := make([]MessageQueue, len(ids))
	for i, id := range ids {
		out[i] = MessageQueue{Topic: "T", BrokerName: "b", QueueID: id}
	}
	return out
}

func (r *lockRig) lock(t *testing.T, group, client string, conn uint64, ids ...int32) []MessageQueue {
	t.Helper()
	return await(t, "LockBatch", func(reply func([]MessageQueue)) {
		r.s.Send(&LockBatch{Body: LockBatchBody{ConsumerGroup: group, ClientID: client, MQSet: qs(ids...)}, ConnID: conn,
			Reply: reply})
	})
}

func (r *lockRig) unlock(t *testing.T, group, client string, ids ...int32) {
	t.Helper()
	await(t, "UnlockBatch", func(reply func(struct{})) {
		r.s.Send(&UnlockBatch{Body: LockBatchBody{ConsumerGroup: group, ClientID: client, MQSet: qs(ids...)},
			Done: func() { reply(struct{}{}) }})
	})
}

func (r *lockRig) holders(t *testing.T, group string) string {
	t.Helper()
	m := await(t, "ListLocks", func(reply func(map[MessageQueue]string)) {
		r.s.Send(&ListLocks{Group: group, Reply: reply})
	})
	out := ""
	for id := int32(0); id < 8; id++ {
		if c, ok := m[MessageQueue{"T", "b", id}]; ok {
			out += fmt.Sprintf("%d:%s ", id, c)
		}
	}
	return out
}

func ids(mqs []MessageQueue) string { return fmt.Sprint(mqs) }

// TestLockTable walks RocketMQ's lock rules step by step on one stage.
func TestLockTable(t *testing.T) {
	r := newLockRig(t)
	type step struct {
		name    string
		advance time.Duration
		group   string
		client  string
		lock    []int32 // nil: unlock
		unlock  []int32
		granted []int32
		holders string // of group G after the step
	}
	steps := []step{
		{name: "a takes free queues", group: "G", client: "a", lock: []int32{0, 1, 2}, granted: []int32{0, 1, 2},
			holders: "0:a 1:a 2:a "},
		{name: "b gets only the free one", group: "G", client: "b", lock: []int32{1, 2, 3}, granted: []int32{3},
			holders: "0:a 1:a 2:a 3:b "},
		{name: "a renews", advance: 50 * time.Second, group: "G", client: "a", lock: []int32{0, 1}, granted: []int32{0, 1},
			holders: "0:a 1:a 2:a 3:b "},
		{name: "other group is independent", group: "H", client: "b", lock: []int32{0}, granted: []int32{0},
			holders: "0:a 1:a 2:a 3:b "},
		{name: "a's unrenewed queue expires and b takes it", advance: 11 * time.Second, group: "G", client: "b",
			lock: []int32{0, 2}, granted: []int32{2}, holders: "0:a 1:a 2:b "},
		{name: "b's unlock of a queue it does not hold changes nothing", group: "G", client: "b", unlock: []int32{0, 1},
			holders: "0:a 1:a 2:b "},
		{name: "a unlocks", group: "G", client: "a", unlock: []int32{0}, holders: "1:a 2:b "},
		{name: "b takes the unlocked queue at once", group: "G", client: "b", lock: []int32{0}, granted: []int32{0},
			holders: "0:b 1:a 2:b "},
		{name: "everything expires", advance: 61 * time.Second, group: "G", client: "c", lock: []int32{}, granted: []int32{},
			holders: ""},
	}
	for _, s := range steps {
		r.clk.advance(s.advance)
		if s.lock != nil {
			got := r.lock(t, s.group, s.client, 1, s.lock...)
			if ids(got) != ids(qs(s.granted...)) {
				t.Errorf("%s: granted %v, want %v", s.name, got, qs(s.granted...))
			}
		} else {
			r.unlock(t, s.group, s.client, s.unlock...)
		}
		if got := r.holders(t, "G"); got != s.holders {
			t.Errorf("%s: holders %q, want %q", s.name, got, s.holders)
		}
	}
}

// TestLocksGoWithTheirClient: a closed connection, an unregister from the
// group and a missed heartbeat each free the client's queues at once.
func TestLocksGoWithTheirClient(t *testing.T) {
	r := newLockRig(t)
	heartbeat := func(c *fakeConn, id string) {
		await(t, "Heartbeat", func(reply func(struct{})) {
			r.s.Send(&Heartbeat{Conn: c, Data: consumer(id, "G"), Done: func() { reply(struct{}{}) }})
		})
	}
	a, b := &fakeConn{id: 1}, &fakeConn{id: 2}
	heartbeat(a, "a")
	heartbeat(b, "b")
	r.lock(t, "G", "a", a.id, 0, 1)
	r.lock(t, "G", "b", b.id, 2)
	r.s.Send(&Closed{ConnID: a.id})
	if got := r.holders(t, "G"); got != "2:b " {
		t.Fatalf("after a's connection closed: holders %q, want only b's", got)
	}
	if got := r.lock(t, "G", "b", b.id, 0, 1); ids(got) != ids(qs(0, 1)) {
		t.Fatalf("b could not take a's queues: %v", got)
	}
	await(t, "Unregister", func(reply func(struct{})) {
		r.s.Send(&Unregister{ClientID: "b", ConsumerGroup: "G", Done: func() { reply(struct{}{}) }})
	})
	if got := r.holders(t, "G"); got != "" {
		t.Fatalf("after b unregistered: holders %q, want none", got)
	}
	// A lock taken on a connection without a heartbeat still goes with
	// that connection.
	r.lock(t, "G", "x", 9, 5)
	r.s.Send(&Closed{ConnID: 9})
	if got := r.holders(t, "G"); got != "" {
		t.Fatalf("after x's connection closed: holders %q, want none", got)
	}
}

// failConn refuses every write.
type failConn struct{ fakeConn }

func (c *failConn) Send(Request) error { return errors.New("connection reset") }

func TestSendToProducerRoundRobin(t *testing.T) {
	r := newLockRig(t)
	hb := func(c Conn, id string, group string) {
		await(t, "Heartbeat", func(reply func(struct{})) {
			r.s.Send(&Heartbeat{Conn: c, Data: HeartbeatData{ClientID: id, ProducerDataSet: []ProducerData{{GroupName: group}}},
				Done: func() { reply(struct{}{}) }})
		})
	}
	p1, p2, other := &fakeConn{id: 1}, &fakeConn{id: 2}, &fakeConn{id: 3}
	dead := &failConn{fakeConn{id: 4}}
	hb(p1, "p1", "PG")
	hb(p2, "p2", "PG")
	hb(dead, "p0", "PG") // sorts first, never takes a request
	hb(other, "o", "OTHER")
	send := func(group string) string {
		return await(t, "SendToProducer", func(reply func(string)) {
			r.s.Send(&SendToProducer{Group: group, Reply: reply, Request: CheckTransaction{MsgID: "m", Message: []byte("body")}})
		})
	}
	var got []string
	for range 4 {
		got = append(got, send("PG"))
	}
	if fmt.Sprint(got) != "[p1 p2 p1 p2]" {
		t.Errorf("requests went to %v, want round robin over the live producers [p1 p2 p1 p2]", got)
	}
	if id := send("NOBODY"); id != "" {
		t.Errorf("a group without producers took a request on %q", id)
	}
	for _, c := range []*fakeConn{p1, p2} {
		c.mu.Lock()
		for _, r := range c.sent {
			if p, ok := r.Push.(CheckTransaction); !ok || !r.Oneway || p.MsgID != "m" {
				t.Errorf("conn %d got %+v", c.id, r)
			}
		}
		c.mu.Unlock()
	}
	if len(other.sent) != 0 {
		t.Errorf("a client of another group got %d requests", len(other.sent))
	}
}

// FuzzParseLockBatch: the body parser never panics, and an accepted body
// names a group, a client and only valid queues.
func FuzzParseLockBatch(f *testing.F) {
	f.Add([]byte(`{"consumerGroup":"G","clientId":"10.0.0.1@1","mqSet":[{"topic":"T","brokerName":"b","queueId":3}]}`))
	f.Add([]byte(`{"clientId":"c@1","consumerGroup":"G","mqSet":[],"onlyThisBroker":true}`))
	f.Add([]byte(`{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"","queueId":-1}]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := ParseLockBatch(b)
		if err != nil {
			return
		}
		if body.ConsumerGroup == "" || body.ClientID == "" {
			t.Fatalf("accepted %q without group or client", b)
		}
		for _, mq := range body.MQSet {
			if mq.Topic == "" || mq.QueueID < 0 {
				t.Fatalf("accepted queue %+v", mq)
			}
		}
		FormatLockBatchResponse(body.MQSet)
	})
}
