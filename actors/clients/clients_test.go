package clients

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/wirecode"
)

const wait = 5 * time.Second

// goClientBody is the exact HEART_BEAT body of rocketmq-client-go/v2
// (docs: rocketmq-facts.md section 2.4).
const goClientBody = `{"clientID":"10.0.0.1@1234","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[{"groupName":"CG","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T1","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1700000000000000000,"expressionType":"TAG"},{"classFilterMode":false,"topic":"T2","subString":"a||b","tagsSet":["a","b"],"codeSet":["97","98"],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`

// fakeConn records what the stage sends to a client.
type fakeConn struct {
	id   uint64
	mu   sync.Mutex
	sent []Request
}

func (c *fakeConn) ID() uint64         { return c.id }
func (c *fakeConn) RemoteAddr() string { return fmt.Sprintf("10.0.0.%d:5000", c.id) }
func (c *fakeConn) Send(r Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, r)
	return nil
}

func (c *fakeConn) notifications(t *testing.T) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var groups []string
	for _, r := range c.sent {
		p, ok := r.Push.(ConsumerIDsChanged)
		if !ok || !r.Oneway || p.Code() != wirecode.NotifyConsumerIDsChanged {
			t.Errorf("conn %d got %+v, want a oneway NOTIFY_CONSUMER_IDS_CHANGED (40)", c.id, r)
		}
		groups = append(groups, p.Group)
	}
	return groups
}

type rig struct {
	sys  *actor.ActorSystem
	view View
	s    *stage.Stage
	self atomic.Pointer[stage.Stage]

	mu      sync.Mutex
	ensured []string
}

func newRig(t *testing.T, expireAfter time.Duration) *rig {
	t.Helper()
	r := &rig{sys: stage.NewSystem(zerolog.Nop())}
	m := stage.NewRegistry(prometheus.NewRegistry())
	s, err := m.Spawn(r.sys, supervisor.New(supervisor.Policy{}), StageName, Producer(Options{
		View: &r.view, ExpireAfter: expireAfter,
		EnsureRetryTopic: func(g string) {
			r.mu.Lock()
			r.ensured = append(r.ensured, g)
			r.mu.Unlock()
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	r.self.Store(s)
	r.s = s
	t.Cleanup(func() {
		s.Stop()
		r.sys.Shutdown()
	})
	return r
}

func (r *rig) heartbeat(t *testing.T, c *fakeConn, hb HeartbeatData) {
	t.Helper()
	done := make(chan struct{})
	r.s.Send(&Heartbeat{Conn: c, Data: hb, Done: func() { close(done) }})
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("heartbeat not applied")
	}
}

// consumer builds a heartbeat of client id in the given clustering groups.
func consumer(id string, groups ...string) HeartbeatData {
	hb := HeartbeatData{ClientID: id}
	for _, g := range groups {
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, ConsumerData{GroupName: g, MessageModel: "CLUSTERING",
			SubscriptionDataSet: []SubscriptionData{{Topic: "T", SubString: "*"}}})
	}
	return hb
}

func (r *rig) list(t *testing.T, group string) []string {
	t.Helper()
	ch := make(chan []string, 1)
	r.s.Send(&ListConsumers{Group: group, Reply: func(ids []string) { ch <- ids }})
	select {
	case ids := <-ch:
		return ids
	case <-time.After(wait):
		t.Fatal("ListConsumers not answered")
		return nil
	}
}

func expectNotes(t *testing.T, step string, conns map[string]*fakeConn, want map[string][]string) {
	t.Helper()
	for name, c := range conns {
		got := c.notifications(t)
		if fmt.Sprint(got) != fmt.Sprint(want[name]) {
			t.Errorf("%s: %s was notified for %v, want %v", step, name, got, want[name])
		}
	}
}

func TestParseHeartbeatGoClientBody(t *testing.T) {
	got, err := ParseHeartbeat([]byte(goClientBody))
	if err != nil {
		t.Fatal(err)
	}
	want := HeartbeatData{
		ClientID:        "10.0.0.1@1234",
		ProducerDataSet: []ProducerData{{GroupName: "PG"}},
		ConsumerDataSet: []ConsumerData{{
			GroupName: "CG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
			SubscriptionDataSet: []SubscriptionData{
				{Topic: "T1", SubString: "*", TagsSet: []string{}, CodeSet: []string{}, SubVersion: 1700000000000000000,
					ExpressionType: "TAG"},
				{Topic: "T2", SubString: "a||b", TagsSet: []string{"a", "b"}, CodeSet: []string{"97", "98"}, SubVersion: 1,
					ExpressionType: "TAG"},
			},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseHeartbeat =\n%+v\nwant\n%+v", got, want)
	}
	for _, bad := range []string{``, `not json`, `{}`, `{"clientID":""}`, `{"clientID":null}`, `[]`,
		`{"clientID":"x","consumerDataSet":{}}`,
		`{"clientID":"x","consumerDataSet":[{"subscriptionDataSet":[{"subVersion":"abc"}]}]}`,
		`{"clientID":"x","consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[1,}]}]}`,
		`{"clientID":"x","consumerDataSet":[{"unitMode":"maybe"}]}`} {
		if _, err := ParseHeartbeat([]byte(bad)); err == nil {
			t.Errorf("ParseHeartbeat(%q) succeeded", bad)
		}
	}
}

func TestFormatConsumerList(t *testing.T) {
	for _, tt := range []struct {
		ids  []string
		want string
	}{
		{[]string{"a@1", "b@2"}, `{"consumerIdList":["a@1","b@2"]}`},
		{[]string{}, `{"consumerIdList":[]}`},
	} {
		if got := string(FormatConsumerList(tt.ids)); got != tt.want {
			t.Errorf("FormatConsumerList(%v) = %s, want %s", tt.ids, got, tt.want)
		}
	}
}

func TestMembershipAndNotify(t *testing.T) {
	r := newRig(t, time.Minute)
	a, b, c := &fakeConn{id: 1}, &fakeConn{id: 2}, &fakeConn{id: 3}
	conns := map[string]*fakeConn{"a": a, "b": b, "c": c}

	r.heartbeat(t, b, consumer("b@2", "G"))
	expectNotes(t, "b joins", conns, map[string][]string{"b": {"G"}})

	r.heartbeat(t, a, consumer("a@1", "G"))
	expectNotes(t, "a joins", conns, map[string][]string{"a": {"G"}, "b": {"G", "G"}})
	if got := r.list(t, "G"); fmt.Sprint(got) != "[a@1 b@2]" {
		t.Errorf("ListConsumers(G) = %v, want sorted [a@1 b@2]", got)
	}

	// The same heartbeat again changes nothing; another group notifies nobody in G.
	r.heartbeat(t, a, consumer("a@1", "G"))
	r.heartbeat(t, c, consumer("c@3", "H"))
	expectNotes(t, "repeat and other group", conns,
		map[string][]string{"a": {"G"}, "b": {"G", "G"}, "c": {"H"}})

	// Opaques of the notifications are distinct.
	seen := map[int32]bool{}
	for _, fc := range []*fakeConn{a, b, c} {
		fc.mu.Lock()
		for _, cmd := range fc.sent {
			if seen[cmd.Opaque] {
				t.Errorf("opaque %d reused", cmd.Opaque)
			}
			seen[cmd.Opaque] = true
		}
		fc.mu.Unlock()
	}

	// A closed connection drops its client and tells the rest.
	r.s.Send(&Closed{ConnID: a.id})
	if got := r.list(t, "G"); fmt.Sprint(got) != "[b@2]" {
		t.Errorf("after close, ListConsumers(G) = %v, want [b@2]", got)
	}
	expectNotes(t, "a closed", conns, map[string][]string{"a": {"G"}, "b": {"G", "G", "G"}, "c": {"H"}})

	// c moves from H to G: both groups changed.
	r.heartbeat(t, c, consumer("c@3", "G"))
	expectNotes(t, "c moves", conns, map[string][]string{"a": {"G"}, "b": {"G", "G", "G", "G"}, "c": {"H", "G"}})

	// Unregistering b from G tells c.
	done := make(chan struct{})
	r.s.Send(&Unregister{ClientID: "b@2", ConsumerGroup: "G", Done: func() { close(done) }})
	<-done
	if got := r.list(t, "G"); fmt.Sprint(got) != "[c@3]" {
		t.Errorf("after unregister, ListConsumers(G) = %v, want [c@3]", got)
	}
	expectNotes(t, "b unregistered", conns,
		map[string][]string{"a": {"G"}, "b": {"G", "G", "G", "G"}, "c": {"H", "G", "G"}})
	if got := r.list(t, "nobody"); got == nil || len(got) != 0 {
		t.Errorf("ListConsumers(nobody) = %#v, want an empty non-nil list", got)
	}
}

func TestExpiry(t *testing.T) {
	const expire = 300 * time.Millisecond
	r := newRig(t, expire)
	a, b := &fakeConn{id: 1}, &fakeConn{id: 2}
	begin := time.Now()
	r.heartbeat(t, a, consumer("a@1", "G"))
	r.heartbeat(t, b, consumer("b@2", "G"))
	deadline := time.Now().Add(wait)
	for {
		r.heartbeat(t, b, consumer("b@2", "G")) // b stays alive
		ids := r.list(t, "G")
		if fmt.Sprint(ids) == "[b@2]" {
			break
		}
		if fmt.Sprint(ids) != "[a@1 b@2]" {
			t.Fatalf("ListConsumers(G) = %v", ids)
		}
		if time.Now().After(deadline) {
			t.Fatal("a@1 never expired")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if el := time.Since(begin); el < expire {
		t.Errorf("a@1 expired after %s, before ExpireAfter %s", el, expire)
	}
	if got := b.notifications(t); fmt.Sprint(got) != "[G G]" {
		t.Errorf("b notified for %v, want [G G] (join, then a's expiry)", got)
	}
}

func TestViewLookup(t *testing.T) {
	var empty View
	if _, ok := empty.Lookup("CG", "T1"); ok {
		t.Error("Lookup on an unpublished View succeeded")
	}
	r := newRig(t, time.Minute)
	hb, err := ParseHeartbeat([]byte(goClientBody))
	if err != nil {
		t.Fatal(err)
	}
	r.heartbeat(t, &fakeConn{id: 1}, hb)
	tests := []struct {
		group, topic string
		want         string
		ok           bool
	}{
		{"CG", "T1", "*", true},
		{"CG", "T2", "a||b", true},
		{"CG", "T3", "", false},
		{"PG", "T1", "", false},
		{"cg", "T1", "", false},
	}
	for _, tt := range tests {
		got, ok := r.view.Lookup(tt.group, tt.topic)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Lookup(%s, %s) = %q, %v; want %q, %v", tt.group, tt.topic, got, ok, tt.want, tt.ok)
		}
	}
	if got := r.list(t, "CG"); fmt.Sprint(got) != "[10.0.0.1@1234]" {
		t.Errorf("ListConsumers(CG) = %v", got)
	}
	if got := r.list(t, "PG"); len(got) != 0 {
		t.Errorf("a producer group lists consumers %v", got)
	}
	r.s.Send(&Closed{ConnID: 1})
	r.list(t, "CG") // barrier
	if _, ok := r.view.Lookup("CG", "T1"); ok {
		t.Error("subscription still published after the client left")
	}
}

func TestEnsureRetryTopicForClusteringOnly(t *testing.T) {
	r := newRig(t, time.Minute)
	hb := HeartbeatData{ClientID: "x@1", ProducerDataSet: []ProducerData{{GroupName: "PG"}},
		ConsumerDataSet: []ConsumerData{
			{GroupName: "C1", MessageModel: "CLUSTERING"},
			{GroupName: "B1", MessageModel: "BROADCASTING"},
			{GroupName: "C2", MessageModel: "CLUSTERING"},
		}}
	r.heartbeat(t, &fakeConn{id: 1}, hb)
	r.heartbeat(t, &fakeConn{id: 2}, HeartbeatData{ClientID: "p@2", ProducerDataSet: []ProducerData{{GroupName: "PG"}}})
	r.mu.Lock()
	got := append([]string(nil), r.ensured...)
	r.mu.Unlock()
	if fmt.Sprint(got) != "[C1 C2]" {
		t.Errorf("EnsureRetryTopic called for %v, want [C1 C2]", got)
	}
}
