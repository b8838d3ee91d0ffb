package nsrvcodec

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// fakeClock is a concurrency-safe injectable clock.
type fakeClock struct{ off atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return t0.Add(time.Duration(c.off.Load())) }
func (c *fakeClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// syncBuffer is a log sink safe for the actor goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startActor spawns the registry actor as a supervised stage on a quiet
// actor system.
func startActor(t *testing.T, clock *fakeClock, logs *syncBuffer) *stage.Stage {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	reg := stage.NewRegistry(nil)
	st, err := reg.Spawn(system, supervisor.New(supervisor.Policy{OnRestart: reg.Restarted, Retire: reg.Retire}), "namesrv",
		namesrv.Producer(namesrv.Options{Logger: zerolog.New(logs), Now: clock.Now, ScanInterval: 2 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Stop()
		system.Shutdown()
	})
	return st
}

// ask sends cmd as a Request and waits for the reply.
func ask(t *testing.T, st *stage.Stage, cmd *remoting.Command) *remoting.Command {
	t.Helper()
	ch := make(chan *remoting.Command, 1)
	Serve(st, cmd, 0, nil, func(c *remoting.Command) { ch <- c })
	select {
	case resp := <-ch:
		return resp
	case <-time.After(5 * time.Second):
		t.Fatal("no reply")
		return nil
	}
}

func TestActor(t *testing.T) {
	clock := &fakeClock{}
	logs := &syncBuffer{}
	st := startActor(t, clock, logs)

	req, err := NewRegisterRequest(master("broker-a", "10.0.0.1:10911"), topics(topic("T", 4)), namesrv.DataVersion{Counter: 1})
	if err != nil {
		t.Fatal(err)
	}
	req.Opaque = 11
	if resp := ask(t, st, req); resp.Code != remoting.Success || resp.Opaque != 11 {
		t.Fatalf("register: %+v", resp)
	}

	// Value-typed Request, route lookup.
	ch := make(chan *remoting.Command, 2)
	st.Send(namesrv.Request{Call: namesrv.GetRoute{Topic: "T"}, Reply: func(a namesrv.Answer) { ch <- Encode(routeReq("T"), a) }})
	if resp := <-ch; resp.Code != remoting.Success || !strings.Contains(string(resp.Body), `"0":"10.0.0.1:10911"`) {
		t.Fatalf("route: %d %s", resp.Code, resp.Body)
	}

	// A oneway request is served but not answered: the next reply is the
	// next request's.
	oneway := routeReq("T")
	oneway.Flag = remoting.FlagOneway
	Serve(st, oneway, 0, nil, func(c *remoting.Command) { ch <- c })
	if resp := ask(t, st, remoting.NewRequest(remoting.GetAllTopicListFromNameserver, nil, nil)); string(resp.Body) != `{"topicList":["T"]}` {
		t.Fatalf("topic list: %s", resp.Body)
	}
	select {
	case c := <-ch:
		t.Fatalf("oneway answered: %+v", c)
	default:
	}

	// Nil command and nil Reply do not crash the actor.
	st.Send(&namesrv.Request{Call: namesrv.GetRoute{Topic: "T"}})
	nilCh := make(chan namesrv.Answer, 1)
	st.Send(&namesrv.Request{Reply: func(a namesrv.Answer) { nilCh <- a }})
	if a := <-nilCh; wireCode(a.Status) != remoting.SystemError || a.Remark != "namesrv: nil request" {
		t.Fatalf("nil call: %+v", a)
	}

	// Expiry driven by the injected clock and the scan timer.
	clock.Advance(namesrv.DefaultHeartbeatTimeout + time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for ask(t, st, routeReq("T")).Code != remoting.TopicNotExist {
		if time.Now().After(deadline) {
			t.Fatal("broker never expired")
		}
		time.Sleep(time.Millisecond)
	}
	out := logs.String()
	for _, want := range []string{`"message":"namesrv: broker registered"`, `"message":"namesrv: broker expired"`,
		`"brokerName":"broker-a"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

// TestActorRestartStartsEmpty checks the documented restart behaviour: the
// table is rebuilt empty and the scan timer keeps running once.
func TestActorRestartStartsEmpty(t *testing.T) {
	clock := &fakeClock{}
	st := startActor(t, clock, &syncBuffer{})
	req, err := NewRegisterRequest(master("broker-a", "10.0.0.1:10911"), topics(topic("T", 4)), namesrv.DataVersion{})
	if err != nil {
		t.Fatal(err)
	}
	if resp := ask(t, st, req); resp.Code != remoting.Success {
		t.Fatal(resp.Remark)
	}
	// A panicking Reply fails the actor; the default strategy restarts it.
	Serve(st, routeReq("T"), 0, nil, func(*remoting.Command) { panic("reply failed") })
	if resp := ask(t, st, routeReq("T")); resp.Code != remoting.TopicNotExist {
		t.Fatalf("after restart: code %d", resp.Code)
	}
	if resp := ask(t, st, req); resp.Code != remoting.Success {
		t.Fatal(resp.Remark)
	}
	clock.Advance(namesrv.DefaultHeartbeatTimeout + time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for ask(t, st, routeReq("T")).Code != remoting.TopicNotExist {
		if time.Now().After(deadline) {
			t.Fatal("no expiry after restart")
		}
		time.Sleep(time.Millisecond)
	}
}
