package process_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/netloop"
)

// startControllers starts three name servers with controllers, their raft
// listeners opened on port 0 first and handed over through ListenFunc;
// mutate adjusts each node's configuration.
func startSecuredControllers(t *testing.T, mutate func(i int, c *process.Config)) []*process.Node {
	t.Helper()
	var lns []net.Listener
	var peers []string
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns, peers = append(lns, ln), append(peers, ln.Addr().String())
	}
	dir := t.TempDir()
	var nodes []*process.Node
	for i, ln := range lns {
		ln := ln
		d := filepath.Join(dir, strconv.Itoa(i))
		cfg := process.Config{NamesrvListen: "127.0.0.1:0", NamesrvDir: filepath.Join(d, "namesrv"), Logger: zerolog.Nop(),
			Controller: controller.Config{Listen: peers[i], Peers: peers, Dir: filepath.Join(d, "controller"),
				ListenFunc: func(string, string) (net.Listener, error) { return ln, nil }}}
		mutate(i, &cfg)
		n, err := process.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Stop(context.Background()) })
		nodes = append(nodes, n)
	}
	return nodes
}

// waitLeader waits for one of nodes' controllers to lead.
func waitLeader(t *testing.T, nodes []*process.Node) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range nodes {
			if n.Controller().IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no controller leader within 15s")
	return -1
}

// plainRaft is a raft StreamLayer without credentials.
type plainRaft struct{ net.Listener }

func (plainRaft) Dial(a raft.ServerAddress, d time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(a), d)
}

// forgedVoteRefused sends a RequestVote without credentials to node's
// raft port and checks it is not answered.
func forgedVoteRefused(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(plainRaft{ln}, 1, time.Second, io.Discard)
	defer tr.Close()
	req := &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte(addr), Addr: []byte(addr)}, Term: 1 << 40, LeadershipTransfer: true}
	var resp raft.RequestVoteResponse
	if err := tr.RequestVote(raft.ServerID(addr), raft.ServerAddress(addr), req, &resp); err == nil {
		t.Fatalf("a RequestVote without credentials was answered: %+v", resp)
	}
}

// TestControllerRaftOverMutualTLS: with --tls-cert and --tls-client-ca the
// controllers' raft port speaks mutual TLS with the process's certificate;
// they elect a leader, and an RPC without a certificate is refused.
func TestControllerRaftOverMutualTLS(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	dir := t.TempDir()
	ca := newTestCA(t)
	caPath := filepath.Join(dir, "ca.pem")
	writePEM(t, caPath, "CERTIFICATE", ca.cert.Raw)
	nodes := startSecuredControllers(t, func(i int, c *process.Config) {
		certPath, keyPath := filepath.Join(dir, strconv.Itoa(i)+".crt"), filepath.Join(dir, strconv.Itoa(i)+".key")
		writePair(t, certPath, keyPath, ca.issue(t, "controller-"+strconv.Itoa(i)))
		c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, CertFile: certPath, KeyFile: keyPath, ClientCAFile: caPath}
	})
	l := waitLeader(t, nodes)
	for i, n := range nodes {
		if m := n.Controller().RaftSecurityMode(); m != controller.SecurityMTLS {
			t.Fatalf("node %d: raft security %q, want %q", i, m, controller.SecurityMTLS)
		}
	}
	forgedVoteRefused(t, nodes[(l+1)%3].Controller().RaftAddr())
	if !nodes[l].Controller().IsLeader() {
		t.Fatal("the leader changed")
	}
}

// TestControllerRaftSecretFile: the controllers prove
// ControllerSecretFile's secret on every raft connection.
func TestControllerRaftSecretFile(t *testing.T) {
	t.Parallel() // its own broker or controller; waits more than it computes
	path := filepath.Join(t.TempDir(), "raft.secret")
	if err := os.WriteFile(path, []byte("  0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := startSecuredControllers(t, func(_ int, c *process.Config) { c.ControllerSecretFile = path })
	l := waitLeader(t, nodes)
	if m := nodes[0].Controller().RaftSecurityMode(); m != controller.SecuritySecret {
		t.Fatalf("raft security %q", m)
	}
	forgedVoteRefused(t, nodes[(l+1)%3].Controller().RaftAddr())
	if n := nodes[(l+1)%3].Controller().RaftRefused(); n == 0 {
		t.Fatal("refusal not counted")
	}
	if got := gauge(t, nodes[(l+1)%3], "wheelmq_controller_raft_refused_total"); got < 1 {
		t.Fatalf("wheelmq_controller_raft_refused_total = %v", got)
	}
}

// TestControllerRefusesAnOpenRaftPort: off loopback, a controller with
// neither TLS nor a secret does not start; a short secret is refused.
func TestControllerRefusesAnOpenRaftPort(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.secret")
	if err := os.WriteFile(short, []byte("tooshort"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		secretFile, want string
	}{
		"open":         {"", "--controller-insecure"},
		"short secret": {short, "want at least 16"},
	} {
		_, err := process.Start(process.Config{NamesrvListen: "127.0.0.1:0", Logger: zerolog.Nop(), ControllerSecretFile: tc.secretFile,
			Controller: controller.Config{Listen: "192.0.2.1:9880", Dir: filepath.Join(dir, name)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

// gauge reads an unlabelled counter of n's registry (-1: absent).
func gauge(t *testing.T, n *process.Node, name string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}
