package registrar

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// gatedNamesrv records requests like recordingNamesrv but holds its
// answers while closed.
type gatedNamesrv struct {
	*recordingNamesrv
	gate sync.Mutex
	shut bool
	held []func()
}

func startGated(t *testing.T) *gatedNamesrv {
	t.Helper()
	g := &gatedNamesrv{recordingNamesrv: &recordingNamesrv{conns: map[uint64]*netloop.Conn{}, ch: make(chan struct{}, 1)},
		shut: true}
	g.srv = netloop.NewServer(netloop.Config{Name: "namesrv", Addr: "127.0.0.1:0", NumEventLoop: 1}, g)
	if err := g.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.srv.Stop(context.Background()) })
	return g
}

func (g *gatedNamesrv) OnCommand(c *netloop.Conn, cmd *remoting.Command) {
	g.mu.Lock()
	g.got = append(g.got, cmd)
	g.mu.Unlock()
	select {
	case g.ch <- struct{}{}:
	default:
	}
	answer := func() { _ = c.Send(remoting.NewResponse(cmd, remoting.Success, "")) }
	g.gate.Lock()
	defer g.gate.Unlock()
	if g.shut {
		g.held = append(g.held, answer)
		return
	}
	answer()
}

// open answers what it held and everything from now on.
func (g *gatedNamesrv) open() {
	g.gate.Lock()
	defer g.gate.Unlock()
	g.shut = false
	for _, a := range g.held {
		a()
	}
	g.held = nil
}

// awaitDone sends an Await of version to the rig and returns a channel
// closed when it is done.
func (r *rig) await(version int64) chan struct{} {
	done := make(chan struct{})
	r.st.Send(&Await{Version: version, Topics: []string{"T"}, Done: func() { close(done) }})
	return done
}

func mustBeDone(t *testing.T, what string, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%s: Await not done", what)
	}
}

func mustWait(t *testing.T, what string, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s: Await done early", what)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestAwaitDoneOnceAcknowledged checks that an Await of a version every
// name server acknowledged is done without a registration, and that one
// of a newer table is done once every name server acknowledged a
// registration that carries it (the Await itself has them registered: no
// Kick here).
func TestAwaitDoneOnceAcknowledged(t *testing.T) {
	live1, live2 := startRecording(t), startRecording(t)
	r := startRegistrarWith(t, func(o *Options) { o.RouteWait = time.Minute }, live1.srv.Addr(), live2.srv.Addr())
	live1.waitRegistrations(t, 1)
	live2.waitRegistrations(t, 1)
	// The first registrations may still be on their way back: an Await of
	// version 1 is done once they are, with no registration of its own.
	mustBeDone(t, "version 1", r.await(1))
	for _, ns := range []*recordingNamesrv{live1, live2} {
		if regs, _ := ns.registrations(t); len(regs) != 1 {
			t.Fatalf("%d registrations for an Await of an acknowledged version, want 1", len(regs))
		}
	}

	r.view.Init(topicTable("T1", "T2"), meta.DataVersion{Counter: 2})
	mustBeDone(t, "version 2", r.await(2))
	for _, ns := range []*recordingNamesrv{live1, live2} {
		regs, _ := ns.registrations(t)
		if len(regs) != 2 || strings.Join(regs[1], ",") != "T1,T2" {
			t.Fatalf("registrations when the Await of version 2 was done: %v", regs)
		}
	}
	if got := r.unacked(t, ReasonFailed) + r.unacked(t, ReasonDeadline) + r.unacked(t, ReasonStopped); got != 0 {
		t.Fatalf("%v unacknowledged waits, want 0", got)
	}
}

// TestAwaitsShareARegistration asks for ten Awaits of ten topic changes
// while the name server holds the first registration: none is done before
// the name server answers, and all ten are done by one more registration
// (the one queued behind the first, made with the newest table).
func TestAwaitsShareARegistration(t *testing.T) {
	g := startGated(t)
	r := startRegistrarWith(t, func(o *Options) { o.RouteWait = time.Minute }, g.srv.Addr())
	g.waitRegistrations(t, 1)
	names := []string{"T1"}
	var dones []chan struct{}
	for v := int64(2); v <= 11; v++ {
		names = append(names, fmt.Sprintf("T%d", v))
		r.view.Init(topicTable(names...), meta.DataVersion{Counter: v})
		dones = append(dones, r.await(v))
	}
	mustWait(t, "name server holding its answer", dones[0])
	g.open()
	for i, d := range dones {
		mustBeDone(t, fmt.Sprintf("version %d", i+2), d)
	}
	regs, _ := g.registrations(t)
	if len(regs) != 2 {
		t.Fatalf("%d registrations for ten Awaits, want 2 (the first, and one for all ten)", len(regs))
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if strings.Join(regs[1], ",") != strings.Join(want, ",") {
		t.Fatalf("second registration topics %v, want %v", regs[1], want)
	}
}

// TestAwaitDeadline: with a name server that never answers, an Await is
// done RouteWait after it was asked (not before: the live name server's
// acknowledgement is not enough), counted as a deadline.
func TestAwaitDeadline(t *testing.T) {
	hang := startHanging(t)
	live := startRecording(t)
	const routeWait = 200 * time.Millisecond
	r := startRegistrarWith(t, func(o *Options) { o.Timeout, o.RouteWait = 5*time.Second, routeWait },
		hang.ln.Addr().String(), live.srv.Addr())
	live.waitRegistrations(t, 1)
	asked := time.Now()
	mustBeDone(t, "hanging name server", r.await(1))
	if waited := time.Since(asked); waited < routeWait {
		t.Fatalf("done after %v, before the route wait %v", waited, routeWait)
	}
	if got := r.unacked(t, ReasonDeadline); got != 1 {
		t.Fatalf("unacknowledged waits (deadline) = %v, want 1", got)
	}
	hang.release() // before the stage stops: its unregistration would wait for Timeout
}

// TestAwaitFailedNameServer: a name server nothing listens on fails its
// registration at once, and an Await does not wait for it (a minute's
// route wait), counted as failed.
func TestAwaitFailedNameServer(t *testing.T) {
	live := startRecording(t)
	r := startRegistrarWith(t, func(o *Options) { o.RouteWait = time.Minute }, closedAddr(t), live.srv.Addr())
	live.waitRegistrations(t, 1)
	mustBeDone(t, "dead name server", r.await(1))
	if got := r.unacked(t, ReasonFailed); got != 1 {
		t.Fatalf("unacknowledged waits (failed) = %v, want 1", got)
	}
}

// TestStopSettlesAwaits: stopping the stage ends the waits it holds, and
// an Await through the Kicker once it stopped is done at once.
func TestStopSettlesAwaits(t *testing.T) {
	hang := startHanging(t)
	r := startRegistrarWith(t, func(o *Options) { o.Timeout, o.RouteWait = 5*time.Second, time.Minute }, hang.ln.Addr().String())
	done := make(chan struct{})
	r.kicker.Await(1, []string{"T1"}, func() { close(done) })
	mustWait(t, "hanging name server", done)
	stopped := make(chan struct{})
	go func() { r.st.Stop(); close(stopped) }() // it then unregisters, waiting for the hanging one
	mustBeDone(t, "stopped stage", done)
	hang.release()
	mustBeDone(t, "stop", stopped)
	if got := r.unacked(t, ReasonStopped); got != 1 {
		t.Fatalf("unacknowledged waits (stopped) = %v, want 1", got)
	}
	after := make(chan struct{})
	r.kicker.Await(2, []string{"T2"}, func() { close(after) })
	mustBeDone(t, "Await after the stop", after)
}

// TestAwaitsQueuedAtStopAreDone sends Awaits through the Kicker before,
// while and after the stage stops (it stops slowly: its unregistration
// waits for a name server that does not answer): each is done exactly
// once, whether the stage read it or not.
func TestAwaitsQueuedAtStopAreDone(t *testing.T) {
	hang := startHanging(t)
	r := startRegistrarWith(t, func(o *Options) { o.Timeout, o.RouteWait = 5*time.Second, time.Minute }, hang.ln.Addr().String())
	var mu sync.Mutex
	calls := map[int]int{}
	var all sync.WaitGroup
	sent := 0
	send := func() {
		i := sent
		sent++
		all.Add(1)
		r.kicker.Await(1, nil, func() {
			mu.Lock()
			calls[i]++
			mu.Unlock()
			all.Done()
		})
	}
	for range 50 {
		send()
	}
	stopped := make(chan struct{})
	go func() { r.st.Stop(); close(stopped) }()
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		send()
	}
	hang.release()
	mustBeDone(t, "stop", stopped)
	for range 50 {
		send()
	}
	finished := make(chan struct{})
	go func() { all.Wait(); close(finished) }()
	mustBeDone(t, "Awaits around a stop", finished)
	mu.Lock()
	defer mu.Unlock()
	for i := range sent {
		if calls[i] != 1 {
			t.Fatalf("Await %d of %d done %d times", i, sent, calls[i])
		}
	}
}
