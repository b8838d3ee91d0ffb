package registrar

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/actors/topics"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/nsrvcodec"
	"github.com/wheelmq/wheelmq/netloop/portres"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// wait bounds every wait of these tests (no test asserts a duration).
const wait = 15 * time.Second

// recordingNamesrv is a name server on loopback that answers every
// request SUCCESS and records them.
type recordingNamesrv struct {
	srv *netloop.Server
	mu  sync.Mutex
	got []*remoting.Command
	// conns holds the open connections, to close them from the test.
	conns map[uint64]*netloop.Conn
	ch    chan struct{}
}

func startRecording(t *testing.T) *recordingNamesrv {
	t.Helper()
	r := &recordingNamesrv{conns: map[uint64]*netloop.Conn{}, ch: make(chan struct{}, 1)}
	r.srv = netloop.NewServer(netloop.Config{Name: "namesrv", Addr: "127.0.0.1:0", NumEventLoop: 1}, r)
	if err := r.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.srv.Stop(context.Background()) })
	return r
}

func (r *recordingNamesrv) OnOpen(c *netloop.Conn) {
	r.mu.Lock()
	r.conns[c.ID()] = c
	r.mu.Unlock()
}

func (r *recordingNamesrv) OnClose(c *netloop.Conn, _ error) {
	r.mu.Lock()
	delete(r.conns, c.ID())
	r.mu.Unlock()
}

func (r *recordingNamesrv) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	r.mu.Lock()
	r.got = append(r.got, cmd)
	r.mu.Unlock()
	_ = c.Send(remoting.NewResponse(cmd, remoting.Success, ""))
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

// registrations returns the topic sets of the REGISTER_BROKER requests
// received, and the number of UNREGISTER_BROKER requests.
func (r *recordingNamesrv) registrations(t *testing.T) (regs [][]string, unregs int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cmd := range r.got {
		switch cmd.Code {
		case remoting.RegisterBroker:
			reg := namesrv.NewRegistry()
			if resp := nsrvcodec.Handle(reg, cmd, time.Now(), 0); resp.Code != remoting.Success {
				t.Fatalf("registration refused: %s", resp.Remark)
			}
			regs = append(regs, reg.TopicNames())
		case remoting.UnregisterBroker:
			unregs++
		}
	}
	return regs, unregs
}

// waitRegistrations waits until n registrations arrived and returns them.
func (r *recordingNamesrv) waitRegistrations(t *testing.T, n int) [][]string {
	t.Helper()
	deadline := time.After(wait)
	for {
		if regs, _ := r.registrations(t); len(regs) >= n {
			return regs
		}
		select {
		case <-r.ch:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			regs, _ := r.registrations(t)
			t.Fatalf("%d registrations at %s, want %d", len(regs), r.srv.Addr(), n)
		}
	}
}

// closeConns closes every connection to the server.
func (r *recordingNamesrv) closeConns() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		_ = c.Close()
	}
}

// hangingNamesrv accepts connections and reads requests but never answers,
// until released.
type hangingNamesrv struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	read  chan struct{} // a request's bytes arrived
	wg    sync.WaitGroup
}

func startHanging(t *testing.T) *hangingNamesrv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingNamesrv{ln: ln, read: make(chan struct{}, 16)}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					select {
					case h.read <- struct{}{}:
					default:
					}
				}
			}()
		}
	}()
	t.Cleanup(h.release)
	return h
}

// release closes the listener and every connection.
func (h *hangingNamesrv) release() {
	_ = h.ln.Close()
	h.mu.Lock()
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// rig is a running registrar stage.
type rig struct {
	st      *stage.Stage
	kicker  *Kicker
	view    *topics.View
	metrics *Metrics
}

// unacked is the count of waits done without every acknowledgement for
// reason.
func (r *rig) unacked(t *testing.T, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := r.metrics.Unacknowledged.WithLabelValues(reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func topicTable(names ...string) map[string]meta.TopicConfig {
	m := map[string]meta.TopicConfig{}
	for _, n := range names {
		m[n] = meta.TopicConfig{TopicName: n, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
	}
	return m
}

func startRegistrar(t *testing.T, timeout time.Duration, nameServers ...string) *rig {
	t.Helper()
	return startRegistrarWith(t, func(o *Options) { o.Timeout = timeout }, nameServers...)
}

// startRegistrarWith starts a registrar of the topic table {T1} (version
// 1) with the name servers and the options mutate sets.
func startRegistrarWith(t *testing.T, mutate func(*Options), nameServers ...string) *rig {
	t.Helper()
	view := &topics.View{}
	view.Init(topicTable("T1"), meta.DataVersion{Counter: 1})
	sys := stage.NewSystem(zerolog.Nop())
	reg := stage.NewRegistry(prometheus.NewRegistry())
	k := &Kicker{}
	metrics := NewMetrics(nil)
	opts := Options{
		NameServers: nameServers, Calls: remotingCalls{}, Topics: view, Metrics: metrics,
		Info: namesrv.BrokerInfo{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911"},
	}
	if mutate != nil {
		mutate(&opts)
	}
	st, err := reg.Spawn(sys, supervisor.New(supervisor.Policy{}), StageName, Producer(opts, k))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{st: st, kicker: k, view: view, metrics: metrics}
	t.Cleanup(func() { st.Stop(); sys.Shutdown() })
	return r
}

// TestHangingNameServerDelaysNoOther gives the registrar a name server that
// never answers (and a one-minute timeout and route wait) ahead of two live
// ones: the live ones get the first registration and the one after a topic
// change while the hanging one still holds the first; an Await of the
// change is done only once every name server acknowledged or failed it;
// stopping unregisters from the live ones and leaves no goroutine behind.
func TestHangingNameServerDelaysNoOther(t *testing.T) {
	before := runtime.NumGoroutine()
	hang := startHanging(t)
	live1, live2 := startRecording(t), startRecording(t)
	r := startRegistrarWith(t, func(o *Options) { o.Timeout, o.RouteWait = time.Minute, time.Minute },
		hang.ln.Addr().String(), live1.srv.Addr(), live2.srv.Addr())

	for _, ns := range []*recordingNamesrv{live1, live2} {
		if regs := ns.waitRegistrations(t, 1); strings.Join(regs[0], ",") != "T1" {
			t.Fatalf("first registration topics %v", regs[0])
		}
	}
	select {
	case <-hang.read:
	case <-time.After(wait):
		t.Fatal("the hanging name server got no request")
	}

	// A topic change: registered with the live ones at once; the hanging
	// one has one registration queued behind its first.
	r.view.Init(topicTable("T1", "T2"), meta.DataVersion{Counter: 2})
	r.kicker.Kick()
	for _, ns := range []*recordingNamesrv{live1, live2} {
		if regs := ns.waitRegistrations(t, 2); strings.Join(regs[1], ",") != "T1,T2" {
			t.Fatalf("second registration topics %v", regs[1])
		}
	}

	// An Await of the change waits for every name server: the live ones
	// acknowledged it already, the hanging one does not answer until it
	// is released (its calls then fail).
	done := make(chan struct{})
	r.st.Send(&Await{Version: 2, Done: func() { close(done) }})
	select {
	case <-done:
		t.Fatal("Await done while a name server had not answered")
	case <-time.After(100 * time.Millisecond):
	}
	hang.release()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Await not done after the hanging name server failed")
	}
	if got := r.unacked(t, ReasonFailed); got != 1 {
		t.Errorf("unacknowledged waits (failed) = %v, want 1", got)
	}

	r.st.Stop()
	for _, ns := range []*recordingNamesrv{live1, live2} {
		if _, unregs := ns.registrations(t); unregs != 1 {
			t.Errorf("%s: %d unregistrations, want 1", ns.srv.Addr(), unregs)
		}
	}
	_ = live1.srv.Stop(context.Background())
	_ = live2.srv.Stop(context.Background())
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before+20 { // the actor system's own and gnet's linger briefly
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after stop, %d before:\n%s", runtime.NumGoroutine(), before,
				buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReRegistersWhenConnectionCloses checks that a broker registers again
// soon (not at the next 30 s period) when a name server closes its
// connection, as a restarted name server does, and that a dead name server
// in the list does not stop it.
func TestReRegistersWhenConnectionCloses(t *testing.T) {
	ns := startRecording(t)
	dead := closedAddr(t)
	startRegistrar(t, 0, dead, ns.srv.Addr())
	ns.waitRegistrations(t, 1)
	ns.closeConns()
	ns.waitRegistrations(t, 2)
	ns.closeConns()
	ns.waitRegistrations(t, 3)
}

// closedAddr returns a loopback address nothing listens on: a port this
// test holds (portres.Hold), so no other test's server appears there.
func closedAddr(t *testing.T) string {
	t.Helper()
	return portres.Hold(t)
}
