package member_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller/member"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/netloop/controllertest"
	"github.com/wheelmq/wheelmq/netloop/ctlwire"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// broker is one member under test.
type broker struct {
	m    *member.Member
	role *role.Holder
	dir  string
}

func startBroker(t *testing.T, ctls []string, addr string, dir string, lease, fence time.Duration) *broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	b := &broker{role: role.NewHolder(role.State{}), dir: dir}
	m, err := member.Start(member.Options{Dial: ctlwire.Dialer(remoting.ClientOptions{}), Controllers: ctls, Cluster: "c", BrokerName: "b", BrokerAddr: addr, HAAddr: addr + "-ha",
		Dir: dir, Role: b.role, Logger: testLogger(t, addr), MaxOffset: func() int64 { return 100 }, HeartbeatInterval: 200 * time.Millisecond, Lease: lease, FenceAfter: fence})
	if err != nil {
		t.Fatal(err)
	}
	b.m = m
	t.Cleanup(func() { b.stop(t) })
	return b
}

func testLogger(t *testing.T, addr string) zerolog.Logger {
	if os.Getenv("MEMBER_TEST_LOG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Str("broker", addr).Logger()
}

func (b *broker) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.m.Stop(ctx); err != nil {
		t.Errorf("stop member: %v", err)
	}
}

// waitRole waits up to d for cond on b's role.
func waitRole(t *testing.T, b *broker, d time.Duration, what string, cond func(role.State) bool) role.State {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := b.role.Get()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; role %+v", what, d, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isMaster(st role.State) bool { return st.Kind == role.Master && !st.Fenced }

// twoInSync starts master b1 and replica b2 with SSS {1,2}.
func twoInSync(t *testing.T, ctls []string, lease, fence time.Duration) (*broker, *broker) {
	t.Helper()
	b1 := startBroker(t, ctls, "10.0.0.1:10911", "", lease, fence)
	st := waitRole(t, b1, 10*time.Second, "first broker master", isMaster)
	if st.ReplicaID != 1 || st.BrokerID != 0 || st.Epoch != 1 || st.MasterHAAddr != "10.0.0.1:10911-ha" {
		t.Fatalf("first master state %+v", st)
	}
	b2 := startBroker(t, ctls, "10.0.0.2:10911", "", lease, fence)
	st = waitRole(t, b2, 5*time.Second, "second broker replica", func(s role.State) bool { return s.Kind == role.Replica && s.ReplicaID == 2 })
	if st.BrokerID != 2 || st.MasterAddr != "10.0.0.1:10911" {
		t.Fatalf("replica state %+v", st)
	}
	b1.m.ProposeSyncStateSet([]int64{1, 2})
	waitRole(t, b1, 5*time.Second, "SSS {1,2} on master", func(s role.State) bool { return slices.Equal(s.SyncStateSet, []int64{1, 2}) })
	waitRole(t, b2, 5*time.Second, "SSS {1,2} on replica", func(s role.State) bool { return slices.Equal(s.SyncStateSet, []int64{1, 2}) })
	return b1, b2
}

func TestMasterConnectionClosedReplicaElected(t *testing.T) {
	cl := controllertest.Start(t, 3, 0)
	cl.Leader(10 * time.Second)
	b1, b2 := twoInSync(t, cl.Addrs(), 0, 0)
	// The replica id is persisted.
	if b, err := os.ReadFile(filepath.Join(b2.dir, "ha", member.ReplicaIDFile)); err != nil || strings.TrimSpace(string(b)) != "2" {
		t.Fatalf("replica id file: %q %v", b, err)
	}
	b1.stop(t) // closes its heartbeat connection
	start := time.Now()
	st := waitRole(t, b2, 3*time.Second, "replica promoted", isMaster)
	took := time.Since(start)
	t.Logf("replica master after %v: %+v", took, st)
	if took > 1500*time.Millisecond {
		t.Fatalf("promotion took %v, want about 1 s", took)
	}
	if st.Epoch != 2 || st.BrokerID != 0 || !slices.Equal(st.SyncStateSet, []int64{2}) {
		t.Fatalf("promoted state %+v", st)
	}

	// The old master restarts on its directory: same id, now a replica.
	b1 = startBroker(t, cl.Addrs(), "10.0.0.1:10911", b1.dir, 0, 0)
	st = waitRole(t, b1, 5*time.Second, "old master back as replica", func(s role.State) bool { return s.Kind == role.Replica && s.Epoch == 2 })
	if st.ReplicaID != 1 || st.MasterAddr != "10.0.0.2:10911" {
		t.Fatalf("returning member %+v", st)
	}
}

func TestMasterSilentFencedThenReplaced(t *testing.T) {
	const lease, fence = 1500 * time.Millisecond, 1200 * time.Millisecond
	cl := controllertest.Start(t, 3, lease)
	l := cl.Leader(10 * time.Second)
	// The master reaches the leader only through a proxy (a follower's
	// redirect would name the leader's real address).
	px := startProxy(t, cl.Nodes[l].NetAddr)
	b1 := startBroker(t, []string{px.addr()}, "10.0.0.1:10911", "", lease, fence)
	waitRole(t, b1, 10*time.Second, "first broker master", isMaster)
	b2 := startBroker(t, cl.Addrs(), "10.0.0.2:10911", "", lease, fence)
	waitRole(t, b2, 5*time.Second, "replica", func(s role.State) bool { return s.Kind == role.Replica && s.ReplicaID == 2 })
	b1.m.ProposeSyncStateSet([]int64{1, 2})
	waitRole(t, b2, 5*time.Second, "SSS {1,2}", func(s role.State) bool { return slices.Equal(s.SyncStateSet, []int64{1, 2}) })

	var fencedAt, promotedAt atomic.Int64
	b1.role.Subscribe(func(_, cur role.State) {
		if cur.Fenced {
			fencedAt.CompareAndSwap(0, time.Now().UnixNano())
		}
	})
	b2.role.Subscribe(func(_, cur role.State) {
		if isMaster(cur) {
			promotedAt.CompareAndSwap(0, time.Now().UnixNano())
		}
	})
	start := time.Now()
	px.blackhole()
	waitRole(t, b1, fence+time.Second, "silent master fenced", func(s role.State) bool { return s.Fenced })
	waitRole(t, b2, lease+2*time.Second, "replica promoted after the lease", isMaster)
	f, p := time.Duration(fencedAt.Load()-start.UnixNano()), time.Duration(promotedAt.Load()-start.UnixNano())
	t.Logf("fenced after %v, replica master after %v", f, p)
	// Safety, not speed: the silent master fences itself before the
	// controller may give its lease away (the figure above is the speed).
	if f >= lease {
		t.Fatalf("fenced after %v, not before the %v lease ran out", f, lease)
	}
	if p <= f {
		t.Fatalf("replica promoted (%v) before the old master fenced itself (%v)", p, f)
	}
}

// proxy forwards TCP to a target; blackhole makes it swallow bytes both
// ways and keep the upstream connections open (no close reaches them).
type proxy struct {
	ln     net.Listener
	target string
	hole   atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }
func (p *proxy) blackhole()   { p.hole.Store(true) }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies src to dst; when blackholed it discards, and an ended src
// closes dst only while not blackholed.
func (p *proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.hole.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF || !p.hole.Load() {
				if !p.hole.Load() {
					_ = dst.Close()
				}
			}
			return
		}
	}
}

func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestControllerLeaderChangeKeepsMaster kills the controller leader while
// a master and its replica heartbeat: the new leader gives both a fresh
// lease, so the master is neither replaced nor fenced.
func TestControllerLeaderChangeKeepsMaster(t *testing.T) {
	cl := controllertest.Start(t, 3, 0)
	l := cl.Leader(10 * time.Second)
	b1, b2 := twoInSync(t, cl.Addrs(), 0, 0)
	var changed atomic.Bool
	b1.role.Subscribe(func(_, cur role.State) {
		if !isMaster(cur) || cur.Epoch != 1 {
			changed.Store(true)
		}
	})
	b2.role.Subscribe(func(_, cur role.State) {
		if cur.Kind != role.Replica || cur.Epoch != 1 {
			changed.Store(true)
		}
	})
	start := time.Now()
	cl.StopNode(l)
	l2 := cl.Leader(10 * time.Second)
	t.Logf("controller leader %d -> %d in %v", l, l2, time.Since(start))
	time.Sleep(member.DefaultLease + time.Second) // past the fresh lease
	if changed.Load() {
		t.Fatalf("a controller failover changed the group: master %+v, replica %+v", b1.role.Get(), b2.role.Get())
	}
	g, _ := cl.Nodes[l2].Ctl.Group("c", "b")
	if g.MasterID != 1 || g.MasterEpoch != 1 {
		t.Fatalf("group after the failover: %+v", g)
	}
}

// TestNoSideDoorToTheLeader: a broker configured with followers only is
// redirected to the leader's own address, which is not in its list: it
// must not follow it there (that path may bypass a partition or a proxy);
// it gets no role. Given the leader's address too, it becomes master.
func TestNoSideDoorToTheLeader(t *testing.T) {
	c := controllertest.Start(t, 3, 3*time.Second)
	leader := c.Leader(10 * time.Second)
	var followers []string
	for i, a := range c.Addrs() {
		if i != leader {
			followers = append(followers, a)
		}
	}
	b := startBroker(t, followers, "10.0.0.1:10911", "", 0, 0)
	time.Sleep(1500 * time.Millisecond)
	if st := b.role.Get(); st.Kind != role.Standalone || st.Epoch != 0 {
		t.Fatalf("a broker that can reach followers only got a role through the leader's own address: %+v", st)
	}
	b2 := startBroker(t, c.Addrs(), "10.0.0.2:10911", "", 0, 0)
	waitRole(t, b2, 5*time.Second, "master through the configured leader address", isMaster)
}
