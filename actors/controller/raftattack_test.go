package controller

import (
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop"
)

// attackCluster is three controllers on real loopback sockets: each
// listener is opened on port 0 first and handed over through ListenFunc,
// so that no port is picked ahead.
type attackCluster struct {
	ctls  []*Controller
	peers []string
}

// startAttackCluster starts three controllers with sec.
func startAttackCluster(t *testing.T, sec RaftSecurity) *attackCluster {
	t.Helper()
	var lns []net.Listener
	c := &attackCluster{}
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		c.peers = append(c.peers, ln.Addr().String())
	}
	dir := t.TempDir()
	sec.Loopback = netloop.LoopbackListen
	for i, ln := range lns {
		ln := ln
		ctl, err := Start(Config{Listen: c.peers[i], Peers: c.peers, Dir: filepath.Join(dir, strconv.Itoa(i)), Security: sec,
			ListenFunc: func(network, address string) (net.Listener, error) { return ln, nil },
			Logger:     zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Int("node", i).Logger()})
		if err != nil {
			t.Fatal(err)
		}
		c.ctls = append(c.ctls, ctl)
		t.Cleanup(func() { _ = ctl.Stop(t.Context()) })
	}
	return c
}

// leader waits for a leader and returns its index.
func (c *attackCluster) leader(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, ctl := range c.ctls {
			if ctl.IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader within 10s")
	return -1
}

// plainLayer is a raft StreamLayer that dials without any credentials.
type plainLayer struct{ net.Listener }

func (plainLayer) Dial(a raft.ServerAddress, d time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(a), d)
}

// attacker returns a raft NetworkTransport speaking raft's wire format to
// the controllers: through layer (nil: plain TCP, no credentials).
func attacker(t *testing.T, layer raft.StreamLayer) raft.Transport {
	t.Helper()
	if layer == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		layer = plainLayer{ln}
	}
	tr := raft.NewNetworkTransport(layer, 1, time.Second, io.Discard)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// forge sends every node one AppendEntries from a made-up leader with a
// higher term, carrying a committed register of group evil/evil, and a
// RequestVote with LeadershipTransfer in a configured peer's name. It
// returns how many RPCs got an answer.
func (c *attackCluster) forge(tr raft.Transport, claimID string) int {
	answered := 0
	for i, ctl := range c.ctls {
		term := ctl.node.r.CurrentTerm()
		last := ctl.node.r.LastIndex()
		lastTerm, _ := strconv.ParseUint(ctl.node.r.Stats()["last_log_term"], 10, 64)
		data, _ := json.Marshal(Command{Op: OpRegister, Cluster: "evil", BrokerName: "evil", Addr: "6.6.6.6:1"})
		hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(claimID), Addr: []byte(claimID)}
		ae := &raft.AppendEntriesRequest{RPCHeader: hdr, Term: term + 10, PrevLogEntry: last, PrevLogTerm: lastTerm,
			Entries:           []*raft.Log{{Index: last + 1, Term: term + 10, Type: raft.LogCommand, Data: data}},
			LeaderCommitIndex: last + 1}
		var aer raft.AppendEntriesResponse
		if tr.AppendEntries(raft.ServerID(c.peers[i]), raft.ServerAddress(c.peers[i]), ae, &aer) == nil {
			answered++
		}
		rv := &raft.RequestVoteRequest{RPCHeader: hdr, Term: term + 20, LastLogIndex: last + 100, LastLogTerm: term + 20, LeadershipTransfer: true}
		var rvr raft.RequestVoteResponse
		if tr.RequestVote(raft.ServerID(c.peers[i]), raft.ServerAddress(c.peers[i]), rv, &rvr) == nil {
			answered++
		}
	}
	return answered
}

// writer applies commands on the leader every 20 ms until stop; it counts
// the commits and the failures.
type writer struct {
	ok, failed atomic.Int64
	stop       chan struct{}
	done       sync.WaitGroup
}

func startWriter(t *testing.T, ctl *Controller) *writer {
	w := &writer{stop: make(chan struct{})}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for n := 0; ; n++ {
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			data, _ := json.Marshal(Command{Op: OpPeer, PeerID: "writer", PeerAddr: strconv.Itoa(n)})
			if err := ctl.node.r.Apply(data, time.Second).Error(); err != nil {
				w.failed.Add(1)
			} else {
				w.ok.Add(1)
			}
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *writer) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.done.Wait()
}

// TestRaftForgedRPCsChangeNothing runs three controllers with a cluster
// secret on real sockets and attacks them, for 2 s, with forged
// AppendEntries (a higher term, a committed register) and a RequestVote
// storm (LeadershipTransfer, a configured peer's id, every 150 ms), both
// from a raft transport without credentials and from one that runs the
// handshake with a wrong secret: no leader change, no term change, the
// forged command never applied, and the leader's writes keep committing.
func TestRaftForgedRPCsChangeNothing(t *testing.T) {
	secret := []byte("0123456789abcdef-cluster-secret")
	c := startAttackCluster(t, RaftSecurity{Secret: secret})
	l := c.leader(t)
	claim := c.peers[(l+1)%3] // a configured peer's id
	wrongLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrong := newSecureLayer(wrongLn, wrongLn.Addr(), RaftSecurity{Secret: []byte("not-the-cluster-secret!")}, claim, c.peers, zerolog.Nop())
	plainTr, wrongTr := attacker(t, nil), attacker(t, wrong)
	time.Sleep(300 * time.Millisecond) // let the followers settle into the leader's term
	terms := make([]uint64, 3)
	for i, ctl := range c.ctls {
		terms[i] = ctl.node.r.CurrentTerm()
	}
	w := startWriter(t, c.ctls[l])
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		if n := c.forge(plainTr, claim) + c.forge(wrongTr, claim); n != 0 {
			t.Fatalf("%d forged RPCs were answered", n)
		}
		time.Sleep(150 * time.Millisecond)
	}
	w.halt()
	for i, ctl := range c.ctls {
		if got := ctl.node.r.CurrentTerm(); got != terms[i] {
			t.Errorf("node %d: term %d -> %d", i, terms[i], got)
		}
		if _, ok := ctl.Group("evil", "evil"); ok {
			t.Errorf("node %d applied the forged register", i)
		}
	}
	if !c.ctls[l].IsLeader() {
		t.Errorf("leader %d lost its leadership", l)
	}
	if w.failed.Load() != 0 || w.ok.Load() < 20 {
		t.Errorf("writes during the attack: %d committed, %d failed", w.ok.Load(), w.failed.Load())
	}
	var refused int64
	for _, ctl := range c.ctls {
		refused += ctl.RaftRefused()
	}
	if refused == 0 {
		t.Error("no refusal counted")
	}
	t.Logf("writes committed during the attack: %d; connections refused: %d", w.ok.Load(), refused)
}

// TestRaftForgedAppendEntriesWithoutSecurity is the control: the same
// forged AppendEntries, against controllers whose (loopback) raft port has
// no authentication, is answered and moves the nodes' terms, so the test
// above attacks for real.
func TestRaftForgedAppendEntriesWithoutSecurity(t *testing.T) {
	c := startAttackCluster(t, RaftSecurity{})
	if m := c.ctls[0].RaftSecurityMode(); m != SecurityLoopback {
		t.Fatalf("mode %q, want %q", m, SecurityLoopback)
	}
	l := c.leader(t)
	f := (l + 1) % 3
	before := c.ctls[f].node.r.CurrentTerm()
	if n := c.forge(attacker(t, nil), c.peers[l]); n == 0 {
		t.Fatal("no forged RPC answered by an unauthenticated port")
	}
	if after := c.ctls[f].node.r.CurrentTerm(); after <= before {
		t.Fatalf("follower term %d -> %d: the forgery did not land", before, after)
	}
}
