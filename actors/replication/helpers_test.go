package replication

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/challenge"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/storage"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// The test group's name and HA secret.
const testGroup = "test-cluster/broker-a"

var testSecret = []byte("test-ha-secret-0123456789")

// acceptAsMaster runs the master's side of the challenge on c (a test's
// own listener at addr) with secret.
func acceptAsMaster(c net.Conn, secret []byte, addr string) error {
	p := challenge.Params{Magic: ha.ChallengeMagic, Label: ha.ChallengeLabel, Secret: secret}
	_, err := challenge.Accept(c, p, ha.MasterPeerID(testGroup, addr), func(string) bool { return true })
	return err
}

// testSegment is the CommitLog segment size in these tests: small, so
// streams cross many segment ends (blank markers, short tails).
const testSegment = 64 << 10

// node is one broker of a test group: a real store on a temp dir, its
// epoch file, role and replication service over real TCP.
type node struct {
	t      testing.TB
	dir    string
	store  *storage.Store
	epochs *ha.Epochs
	role   *role.Holder
	svc    *Service
	opts   Options

	mu        sync.Mutex
	truncated []int64
	proposals chan []int64
}

// newNode opens a store and starts a service at st.
func newNode(t testing.TB, st role.State, tweak func(*Options)) *node {
	t.Helper()
	n := &node{t: t, dir: t.TempDir(), role: role.NewHolder(st), proposals: make(chan []int64, 64)}
	var err error
	seg := int64(testSegment)
	if _, ok := t.(*testing.B); ok {
		seg = 256 << 20 // benchmarks measure appends, not segment creation
	}
	n.store, err = storage.Open(n.dir, storage.Options{SegmentSize: seg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.store.Close() })
	if n.epochs, err = ha.OpenEpochs(nil, filepath.Join(n.dir, "ha")); err != nil {
		t.Fatal(err)
	}
	n.opts = Options{
		Store: n.store, Listen: "127.0.0.1:0", Role: n.role, Epochs: n.epochs, Group: testGroup, Secret: testSecret,
		HeartbeatInterval: 100 * time.Millisecond, LagTimeout: 3 * time.Second,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		OnTruncate: func(off int64) {
			n.mu.Lock()
			n.truncated = append(n.truncated, off)
			n.mu.Unlock()
		},
		OnSyncStateSetChange: func(p []int64) {
			select {
			case n.proposals <- p:
			default:
			}
		},
	}
	if tweak != nil {
		tweak(&n.opts)
	}
	n.start()
	return n
}

// start (re)starts the node's service.
func (n *node) start() {
	n.t.Helper()
	svc, err := Start(quietSystem(), n.opts)
	if err != nil {
		n.t.Fatal(err)
	}
	n.svc = svc
	n.t.Cleanup(func() { n.stop() })
}

// stop stops the node's service (idempotent).
func (n *node) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.svc.Stop(ctx); err != nil {
		n.t.Errorf("stop: %v", err)
	}
}

// appendRecords appends count records of random sizes to the node's
// CommitLog (as the writer would) and tells the service.
func (n *node) appendRecords(rng *rand.Rand, count int) int64 {
	n.t.Helper()
	recs := make([][]byte, count)
	for i := range recs {
		recs[i] = makeRecord(100+rng.Intn(3000), rng.Int())
	}
	if _, err := n.store.CommitLog.Append(recs); err != nil {
		n.t.Fatal(err)
	}
	end := n.store.CommitLog.MaxOffset()
	n.svc.Appended(end)
	return end
}

// quietSystem is an actor system that logs nothing.
func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

// makeRecord builds a commit-log record (TOTALSIZE, MAGIC V1, filler).
func makeRecord(size, seed int) []byte {
	r := make([]byte, size)
	binary.BigEndian.PutUint32(r[0:], uint32(size))
	binary.BigEndian.PutUint32(r[4:], 0xDAA320A7)
	for i := 36; i < size; i++ {
		r[i] = byte(seed + i*7)
	}
	return r
}

// follow makes the node a replica of master at epoch.
func (n *node) follow(master *node, id, epoch int64) {
	n.role.Set(role.State{Kind: role.Replica, BrokerID: id, ReplicaID: id, Epoch: epoch,
		MasterHAAddr: master.svc.Addr()})
}

// masterState is the role of a master with replica id 1.
func masterState(epoch int64, sss ...int64) role.State {
	return role.State{Kind: role.Master, ReplicaID: 1, Epoch: epoch, SyncStateSet: sss}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sameLog fails unless both nodes' CommitLog directories are
// byte-identical (an empty trailing segment a replica created after a
// blank marker aside) and their epoch lists equal.
func sameLog(t testing.TB, a, b *node) {
	t.Helper()
	ia, ib := logImage(t, a), logImage(t, b)
	for _, img := range []map[string][]byte{ia, ib} {
		for name, data := range img {
			if _, ok := ia[name]; ok {
				if _, ok := ib[name]; ok {
					continue
				}
			}
			if len(data) == 0 {
				delete(img, name)
			}
		}
	}
	if len(ia) != len(ib) {
		t.Fatalf("%d segment files vs %d", len(ia), len(ib))
	}
	for name, data := range ia {
		if !bytes.Equal(data, ib[name]) {
			t.Fatalf("segment %s differs: %d vs %d bytes", name, len(data), len(ib[name]))
		}
	}
	ea, eb := a.epochs.Entries(), b.epochs.Entries()
	if len(ea) != len(eb) {
		t.Fatalf("epochs %v vs %v", ea, eb)
	}
	for i := range ea {
		if ea[i] != eb[i] {
			t.Fatalf("epochs %v vs %v", ea, eb)
		}
	}
}

// logImage reads every CommitLog segment file of a node.
func logImage(t testing.TB, n *node) map[string][]byte {
	t.Helper()
	dir := n.store.CommitLog.Dir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// caughtUp reports whether r's log ends where m's does.
func caughtUp(m, r *node) bool {
	return r.store.CommitLog.MaxOffset() == m.store.CommitLog.MaxOffset()
}
