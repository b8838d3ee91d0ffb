package controller

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
)

// crashNode is one controller raft node of the crash test: the
// controller's stores (openStores) and FSM on its own crashfs, raft's
// in-memory transport behind a cuttable wrapper.
type crashNode struct {
	id    raft.ServerID
	fs    *crashfs.FS
	fsm   *FSM
	store *raftStores
	trans *cuttableTransport
	r     *raft.Raft
}

// crashGroup is a 3-node controller group whose nodes lose power.
type crashGroup struct {
	t     *testing.T
	r     *rand.Rand
	seed  int64
	nodes []*crashNode
	conf  raft.Configuration
}

const crashDir = "/data/controller"

func newCrashGroup(t *testing.T, seed int64) *crashGroup {
	g := &crashGroup{t: t, r: rand.New(rand.NewSource(seed)), seed: seed}
	for i := 0; i < 3; i++ {
		id := raft.ServerID("n" + strconv.Itoa(i))
		g.conf.Servers = append(g.conf.Servers, raft.Server{Suffrage: raft.Voter, ID: id, Address: raft.ServerAddress(id)})
		g.nodes = append(g.nodes, &crashNode{id: id, fs: crashfs.New()})
	}
	for i := range g.nodes {
		g.start(i)
	}
	t.Cleanup(func() {
		for i := range g.nodes {
			g.stop(i)
		}
	})
	return g
}

// start opens node i's stores on its file system (bootstrapping a new
// one) and starts raft, connected to the others.
func (g *crashGroup) start(i int) {
	n := g.nodes[i]
	rc := raft.DefaultConfig()
	rc.LocalID = n.id
	rc.HeartbeatTimeout, rc.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
	rc.LeaderLeaseTimeout, rc.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
	// Snapshots and compaction run during the test.
	rc.SnapshotThreshold, rc.TrailingLogs, rc.SnapshotInterval = 8, 4, 10*time.Millisecond
	rc.Logger = hclog.NewNullLogger()
	store, err := openStores(crashDir, n.fs, zerolog.Nop())
	if err != nil {
		g.t.Fatalf("seed %d: node %d: open stores: %v", g.seed, i, err)
	}
	n.store, n.fsm = store, NewFSM()
	n.trans = newCuttableTransport(raft.ServerAddress(n.id))
	has, err := store.hasState()
	if err != nil {
		g.t.Fatalf("seed %d: node %d: %v", g.seed, i, err)
	}
	if !has {
		if err := raft.BootstrapCluster(rc, store.log, store.stable, store.snaps, n.trans, g.conf); err != nil {
			g.t.Fatalf("seed %d: node %d: bootstrap: %v", g.seed, i, err)
		}
	}
	if n.r, err = raft.NewRaft(rc, &raftFSM{f: n.fsm}, store.log, store.stable, store.snaps, n.trans); err != nil {
		g.t.Fatalf("seed %d: node %d: raft: %v", g.seed, i, err)
	}
	for j, o := range g.nodes {
		if j != i && o.trans != nil {
			o.trans.Connect(raft.ServerAddress(n.id), n.trans.InmemTransport)
			n.trans.Connect(raft.ServerAddress(o.id), o.trans.InmemTransport)
		}
	}
}

// stop shuts node i down (its file system is kept as it is).
func (g *crashGroup) stop(i int) {
	n := g.nodes[i]
	if n.r == nil {
		return
	}
	n.trans.cut.Store(true)
	if err := n.r.Shutdown().Error(); err != nil {
		g.t.Errorf("node %d shutdown: %v", i, err)
	}
	n.trans.close()
	_ = n.store.Close()
	n.r = nil
}

// crash cuts the power of the nodes at once: none of them sends anything
// more, then each file system keeps what was synced plus a random part
// of the rest (CrashRandom), then the old processes are stopped and the
// nodes restarted from what survived.
func (g *crashGroup) crash(idx ...int) {
	for _, i := range idx {
		g.nodes[i].trans.cut.Store(true)
	}
	images := make([]*crashfs.FS, len(idx))
	for k, i := range idx {
		images[k] = g.nodes[i].fs.CrashRandom(g.r)
	}
	for _, i := range idx {
		g.stop(i)
	}
	for k, i := range idx {
		g.nodes[i].fs = images[k]
		g.start(i)
	}
}

// leader waits for a leader (deadline d) and returns its index.
func (g *crashGroup) leader(d time.Duration) int {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for i, n := range g.nodes {
			if n.r != nil && n.r.State() == raft.Leader {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.t.Fatalf("seed %d: no leader within %v", g.seed, d)
	return -1
}

// waitFuture waits for f with a deadline.
func (g *crashGroup) waitFuture(f raft.Future, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }() // ends when raft resolves f (at the latest at its shutdown)
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		g.t.Fatalf("seed %d: a raft future took more than %v", g.seed, d)
		return nil
	}
}

// crashLoops is the number of crash scenarios per test run:
// WHEELMQ_CONTROLLER_CRASH_LOOPS, 3 by default (task torture:controller
// runs many).
func crashLoops(t *testing.T) int {
	v := os.Getenv("WHEELMQ_CONTROLLER_CRASH_LOOPS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("WHEELMQ_CONTROLLER_CRASH_LOOPS=%q: want a positive number", v)
	}
	return n
}

// TestControllerFSMSurvivesPowerCuts: a 3-node controller group, each node
// on its own crashfs, applies a stream of controller commands (registers,
// sync-state alters, elections, peer records) while one node loses power
// (a random node, mid-stream, with applies in flight) and comes back from
// what its disk kept; then all three lose power at once and restart.
// Afterwards every node holds every acknowledged command's effect, the
// nodes agree, and the FSM invariants hold (a group's epochs never went
// backwards, one master per group per epoch). Seeds are logged
// (WHEELMQ_CONTROLLER_CRASH_SEED replays the commands and crash choices of
// the first loop; raft's timing stays free).
func TestControllerFSMSurvivesPowerCuts(t *testing.T) {
	loops := crashLoops(t)
	base := time.Now().UnixNano()
	if v := os.Getenv("WHEELMQ_CONTROLLER_CRASH_SEED"); v != "" {
		var err error
		if base, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("WHEELMQ_CONTROLLER_CRASH_SEED=%q: %v", v, err)
		}
	}
	for loop := 0; loop < loops; loop++ {
		seed := base + int64(loop)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runPowerCuts(t, seed) })
		if t.Failed() {
			return
		}
	}
}

func runPowerCuts(t *testing.T, seed int64) {
	g := newCrashGroup(t, seed)
	h := newHistory()
	total := 60 + g.r.Intn(60)
	crashAt := 10 + g.r.Intn(total-20)
	victim := g.r.Intn(3)
	type pending struct {
		cmd Command
		f   raft.ApplyFuture
	}
	var inflight []pending
	settle := func() {
		for _, p := range inflight {
			if err := g.waitFuture(p.f, 10*time.Second); err == nil {
				res, _ := p.f.Response().(Result)
				h.acked(t, p.cmd, res, p.f.Index())
			}
		}
		inflight = inflight[:0]
	}
	for i := 0; i < total; i++ {
		if i == crashAt {
			g.crash(victim) // applies are in flight: their outcome is whatever raft says
			t.Logf("node %d lost power after %d commands", victim, i)
		}
		l := g.nodes[g.leader(5*time.Second)]
		cmd := h.next(g.r, l.fsm, i)
		data, err := json.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		inflight = append(inflight, pending{cmd, l.r.Apply(data, time.Second)})
		if g.r.Intn(4) == 0 {
			settle()
		}
		h.observe(t, g)
	}
	settle()
	g.crash(0, 1, 2)
	t.Logf("all three lost power after %d commands (%d acknowledged)", total, h.ackCount)
	g.checkAfterRestart(h)
}

// checkAfterRestart waits until the restarted group has applied its whole
// log on every node, then checks every node against the history.
func (g *crashGroup) checkAfterRestart(h *history) {
	t := g.t
	l := g.nodes[g.leader(10*time.Second)]
	if err := g.waitFuture(l.r.Barrier(5*time.Second), 10*time.Second); err != nil {
		t.Fatalf("seed %d: barrier after the restart: %v", g.seed, err)
	}
	want := l.r.AppliedIndex()
	if want < h.maxIndex {
		t.Fatalf("seed %d: the new leader applied up to %d, below the acknowledged index %d", g.seed, want, h.maxIndex)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, n := range g.nodes {
		for n.r.AppliedIndex() < want {
			if time.Now().After(deadline) {
				t.Fatalf("seed %d: node %d applied %d of %d", g.seed, i, n.r.AppliedIndex(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var first []byte
	for i, n := range g.nodes {
		n.fsm.View(func(s *State) { h.check(t, g.seed, i, s) })
		b, err := n.fsm.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		} else if string(b) != string(first) {
			t.Fatalf("seed %d: node %d's state differs from node 0's:\n%s\n%s", g.seed, i, b, first)
		}
	}
	h.observe(t, g)
	for i, n := range g.nodes {
		first, _ := n.store.log.FirstIndex()
		snaps, _ := n.store.snaps.List()
		t.Logf("node %d: log from index %d, %d snapshot(s), applied %d", i, first, len(snaps), n.r.AppliedIndex())
	}
}
