package clients

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/wirecode"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

func (r *rig) heartbeatFrom(t *testing.T, c *fakeConn, hb HeartbeatData, lang string, version int32) {
	t.Helper()
	done := make(chan struct{})
	r.s.Send(&Heartbeat{Conn: c, Data: hb, Language: lang, Version: version, Done: func() { close(done) }})
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("heartbeat not applied")
	}
}

func ask[T any](t *testing.T, r *rig, msg func(reply func(T, bool)) any) (T, bool) {
	t.Helper()
	type res struct {
		v  T
		ok bool
	}
	ch := make(chan res, 1)
	r.s.Send(msg(func(v T, ok bool) { ch <- res{v, ok} }))
	select {
	case x := <-ch:
		return x.v, x.ok
	case <-time.After(wait):
		t.Fatal("not answered")
		var zero T
		return zero, false
	}
}

func TestConnectionLists(t *testing.T) {
	r := newRig(t, time.Minute)
	hb, err := ParseHeartbeat([]byte(goClientBody))
	if err != nil {
		t.Fatal(err)
	}
	r.heartbeatFrom(t, &fakeConn{id: 1}, hb, "GO", 317)
	java := consumer("10.0.0.2@9", "CG")
	java.ConsumerDataSet[0].ConsumeType, java.ConsumerDataSet[0].ConsumeFromWhere = "CONSUME_PASSIVELY", "CONSUME_FROM_FIRST_OFFSET"
	r.heartbeatFrom(t, &fakeConn{id: 2}, java, "JAVA", 479)

	cc, online := ask[adminbody.ConsumerConnection](t, r, func(reply func(adminbody.ConsumerConnection, bool)) any {
		return &ConsumerConnection{Group: "CG", Reply: reply}
	})
	if !online {
		t.Fatal("CG not online")
	}
	want := adminbody.ConsumerConnection{
		ConnectionSet: []adminbody.Connection{
			{ClientAddr: "10.0.0.1:5000", ClientID: "10.0.0.1@1234", Language: "GO", Version: 317},
			{ClientAddr: "10.0.0.2:5000", ClientID: "10.0.0.2@9", Language: "JAVA", Version: 479},
		},
		// From the most recent heartbeat (the Java one).
		ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
		SubscriptionTable: map[string]adminbody.SubscriptionData{
			"T1": {CodeSet: []int32{}, ExpressionType: "TAG", SubString: "*", SubVersion: 1700000000000000000, TagsSet: []string{}, Topic: "T1"},
			"T2": {CodeSet: []int32{97, 98}, ExpressionType: "TAG", SubString: "a||b", SubVersion: 1, TagsSet: []string{"a", "b"}, Topic: "T2"},
			"T":  {CodeSet: []int32{}, SubString: "*", TagsSet: []string{}, Topic: "T"},
		},
	}
	if !reflect.DeepEqual(cc, want) {
		t.Errorf("consumer connection\n got %+v\nwant %+v", cc, want)
	}
	if _, online := ask[adminbody.ConsumerConnection](t, r, func(reply func(adminbody.ConsumerConnection, bool)) any {
		return &ConsumerConnection{Group: "nobody", Reply: reply}
	}); online {
		t.Error("an unknown group is online")
	}
	pc, found := ask[adminbody.ProducerConnection](t, r, func(reply func(adminbody.ProducerConnection, bool)) any {
		return &ProducerConnection{Group: "PG", Reply: reply}
	})
	if !found || !reflect.DeepEqual(pc.ConnectionSet, []adminbody.Connection{
		{ClientAddr: "10.0.0.1:5000", ClientID: "10.0.0.1@1234", Language: "GO", Version: 317}}) {
		t.Errorf("producer connection %+v (found %v)", pc, found)
	}
	if _, found := ask[adminbody.ProducerConnection](t, r, func(reply func(adminbody.ProducerConnection, bool)) any {
		return &ProducerConnection{Group: "CG", Reply: reply}
	}); found {
		t.Error("a consumer group has producer connections")
	}
	if got := r.view.Topics("CG"); !reflect.DeepEqual(got, []string{"T", "T1", "T2"}) {
		t.Errorf("Topics(CG) = %v", got)
	}
	if got := r.view.MessageModel("CG"); got != "CLUSTERING" {
		t.Errorf("MessageModel(CG) = %q", got)
	}
}

func TestNotifyDisabledPerGroup(t *testing.T) {
	sys := stage.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	var view View
	s, err := stage.NewRegistry(prometheus.NewRegistry()).Spawn(sys, supervisor.New(supervisor.Policy{}), StageName,
		Producer(Options{View: &view, NotifyEnabled: func(g string) bool { return g != "quiet" }}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	r := &rig{sys: sys, s: s}
	a := &fakeConn{id: 1}
	r.heartbeat(t, a, consumer("a@1", "quiet", "loud"))
	if got := a.notifications(t); !reflect.DeepEqual(got, []string{"loud"}) {
		t.Errorf("notified for %v, want [loud] only", got)
	}
}

// answeringConn answers every request it is sent through the stage, as a
// client would over the network.
type answeringConn struct {
	fakeConn
	r      *rig
	answer bool
}

func (c *answeringConn) Send(r Request) error {
	_ = c.fakeConn.Send(r)
	if c.answer && !r.Oneway {
		go c.r.s.Send(&Response{ConnID: c.id, Opaque: r.Opaque,
			Answer: Answer{Code: wirecode.Success, Remark: "running", Body: []byte(`{"properties":{}}`)}})
	}
	return nil
}

func TestInvoke(t *testing.T) {
	r := newRig(t, time.Minute)
	good := &answeringConn{fakeConn: fakeConn{id: 1}, r: r, answer: true}
	mute := &answeringConn{fakeConn: fakeConn{id: 2}, r: r}
	for _, c := range []*answeringConn{good, mute} {
		done := make(chan struct{})
		r.s.Send(&Heartbeat{Conn: c, Data: consumer(map[uint64]string{1: "a@1", 2: "b@2"}[c.id], "G"),
			Done: func() { close(done) }})
		<-done
	}
	call := func(client string, timeout time.Duration) (Answer, error) {
		type res struct {
			c   Answer
			err error
		}
		ch := make(chan res, 1)
		r.s.Send(&Invoke{Group: "G", ClientID: client, Timeout: timeout,
			Request: Relay{RequestCode: wirecode.GetConsumerRunningInfo, Fields: map[string]string{"clientId": client}},
			Reply:   func(c Answer, err error) { ch <- res{c, err} }})
		select {
		case x := <-ch:
			return x.c, x.err
		case <-time.After(wait):
			t.Fatal("Invoke not answered")
			return Answer{}, nil
		}
	}
	resp, err := call("a@1", time.Minute)
	if err != nil || resp.Remark != "running" || string(resp.Body) != `{"properties":{}}` {
		t.Fatalf("answered call: %+v %v", resp, err)
	}
	if _, err := call("b@2", 50*time.Millisecond); !errors.Is(err, ErrCallTimeout) {
		t.Fatalf("mute client: %v, want ErrCallTimeout", err)
	}
	if _, err := call("z@9", time.Minute); !errors.Is(err, ErrNotOnline) {
		t.Fatalf("unknown client: %v, want ErrNotOnline", err)
	}
}
