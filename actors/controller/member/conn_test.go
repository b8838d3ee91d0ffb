package member_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/actors/controller/member"
	"github.com/wheelmq/wheelmq/actors/role"
)

// fakeCtl is a controller behind member.Conn, no network: a follower
// answers CONTROLLER_NOT_LEADER naming leader; the leader answers every
// heartbeat with replica 1 as master of epoch 3 and applies proposals.
type fakeCtl struct {
	mu       sync.Mutex
	leader   string
	beats    map[string][]controller.Heartbeat // by address dialed
	alters   []controller.AlterRequest
	closed   map[string]int
	set      []int64
	setEpoch int64
	refusing bool // the leader refuses every request
	refused  int
}

func (f *fakeCtl) dial(_ context.Context, addr string) (member.Conn, error) {
	return &fakeConn{f: f, addr: addr, done: make(chan struct{})}, nil
}

type fakeConn struct {
	f    *fakeCtl
	addr string
	done chan struct{}
	once sync.Once
}

func (c *fakeConn) Addr() string          { return c.addr }
func (c *fakeConn) Done() <-chan struct{} { return c.done }
func (c *fakeConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.f.mu.Lock()
		c.f.closed[c.addr]++
		c.f.mu.Unlock()
	})
	return nil
}

func (c *fakeConn) answer() member.Reply {
	f := c.f
	if c.addr != f.leader {
		return member.Reply{Code: controller.CodeNotLeader, Remark: "not the leader", LeaderAddr: f.leader}
	}
	if f.refusing {
		f.refused++
		return member.Reply{Code: controller.CodeInvalidRequest, Remark: "refused"}
	}
	return member.Reply{Role: controller.RoleAnswer{ReplicaID: 1, MasterID: 1, MasterEpoch: 3, MasterAddr: "10.0.0.1:10911",
		SyncStateSet: slices.Clone(f.set), SyncStateSetEpoch: f.setEpoch}}
}

func (c *fakeConn) Heartbeat(_ context.Context, h controller.Heartbeat, _ time.Duration) (member.Reply, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.beats[c.addr] = append(c.f.beats[c.addr], h)
	return c.answer(), nil
}

func (c *fakeConn) AlterSyncStateSet(_ context.Context, a controller.AlterRequest, _ time.Duration) (member.Reply, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.alters = append(c.f.alters, a)
	if c.addr == c.f.leader {
		c.f.set, c.f.setEpoch = a.Set.SyncStateSet, a.Set.SyncStateSetEpoch+1
	}
	return c.answer(), nil
}

// TestMemberOverConn drives a member through member.Conn alone: it follows
// a follower's redirect to the configured leader (closing the follower's
// connection), becomes master from the leader's answer, heartbeats with
// its persisted replica id and offsets, and its sync-state set proposal
// carries its epochs; a refused heartbeat changes nothing.
func TestMemberOverConn(t *testing.T) {
	f := &fakeCtl{leader: "ctl-b", beats: map[string][]controller.Heartbeat{}, closed: map[string]int{}, set: []int64{1}}
	holder := role.NewHolder(role.State{})
	m, err := member.Start(member.Options{Controllers: []string{"ctl-a", "ctl-b"}, Dial: f.dial, Cluster: "c", BrokerName: "b",
		BrokerAddr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912", Dir: t.TempDir(), Role: holder,
		MaxOffset: func() int64 { return 100 }, Confirmed: func() int64 { return 90 }, HeartbeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	b := &broker{m: m, role: holder}
	st := waitRole(t, b, 5*time.Second, "master from the leader's answer", isMaster)
	if st.ReplicaID != 1 || st.Epoch != 3 || !slices.Equal(st.SyncStateSet, []int64{1}) {
		t.Fatalf("role %+v", st)
	}
	waitFor(t, "a heartbeat with the persisted id", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		beats := f.beats["ctl-b"]
		return len(beats) >= 2 && beats[len(beats)-1].ReplicaID == 1
	})
	f.mu.Lock()
	first := f.beats["ctl-b"][0]
	redirected, closedA := len(f.beats["ctl-a"]), f.closed["ctl-a"]
	f.refusing = true
	f.mu.Unlock()
	want := controller.Heartbeat{Cluster: "c", BrokerName: "b", BrokerAddr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912", MaxOffset: 100, Confirmed: 90}
	if first != want || redirected != 1 || closedA != 1 {
		t.Fatalf("first beat to the leader %+v (want %+v); beats to the follower %d, its connection closed %d times", first, want, redirected, closedA)
	}
	waitFor(t, "two refused heartbeats", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.refused >= 2 })
	if st := holder.Get(); !isMaster(st) || st.Epoch != 3 || st.ReplicaID != 1 {
		t.Fatalf("role after refused heartbeats: %+v", st)
	}
	f.mu.Lock()
	f.refusing = false
	f.mu.Unlock()

	m.ProposeSyncStateSet([]int64{1, 2})
	waitRole(t, b, 5*time.Second, "the proposed set", func(s role.State) bool {
		return slices.Equal(s.SyncStateSet, []int64{1, 2}) && s.SyncStateSetEpoch == 1
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.alters[0]
	if a.Cluster != "c" || a.BrokerName != "b" || a.MasterID != 1 || a.MasterEpoch != 3 || !slices.Equal(a.Set.SyncStateSet, []int64{1, 2}) || a.Set.SyncStateSetEpoch != 0 {
		t.Fatalf("proposal %+v", a)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
