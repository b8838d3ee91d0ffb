package cluster

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/cmd/internal/chaos/proxy"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// NamesrvFlags and BrokerFlags are the flags the replication parts add;
// Supports checks a binary for them.
var (
	NamesrvFlags = []string{"--controller-listen", "--controller-peers", "--controller-secret-file"}
	BrokerFlags  = []string{"--ha-listen", "--ha-advertise", "--ha-secret-file", "--replication", "--min-in-sync-replicas"}
)

// Config describes the deployment.
type Config struct {
	// Bin is the wheelmq binary.
	Bin string
	// Dir holds every process's data dir.
	Dir string
	// Groups is the number of broker groups (broker-a, broker-b, ...);
	// Replicas the brokers per group; MinInSync their
	// --min-in-sync-replicas.
	Groups, Replicas, MinInSync int
	// Cluster is the cluster name (default DefaultCluster).
	Cluster string
	// BrokerArgs are appended to every broker's flags (e.g. "--flush sync").
	BrokerArgs []string
	// Log receives the proxies' mode changes.
	Log zerolog.Logger
	// NoReplication starts plain name servers and standalone brokers (no
	// controller, HA or replication flags; Replicas should be 1): the
	// harness's own test on a binary without the replication parts.
	NoReplication bool

	// NamesrvArgs are appended to every name server's flags (e.g.
	// "--tls-mode enforcing").
	NamesrvArgs []string
	// Env is added to every process's environment (e.g.
	// WHEELMQ_SECRET_KEY=..., kept off the command line).
	Env []string
	// ACL, when set, is the plain_acl.yml every process starts with
	// (--acl-file): each process its own copy, Namesrv.ACLFile and
	// Broker.ACLFile, so that a test can change one process's file.
	ACL string
	// Admin signs the harness's own requests (role discovery) for
	// processes with an ACL.
	Admin auth.Credentials
	// TLS, when set, is the client side of the harness's own connections,
	// remoting (role discovery) and HTTPS (/healthz), for processes under
	// --tls-mode enforcing.
	TLS *tls.Config
	// GRPC gives every broker a gRPC endpoint on a held port
	// (Broker.GRPC); without it brokers run none.
	GRPC bool
}

// Cluster is a started deployment.
type Cluster struct {
	Namesrvs []*Namesrv
	Groups   []*Group
	cfg      Config
	health   *http.Client // /healthz, over HTTPS with Config.TLS
}

// Namesrv is one name server with its embedded controller.
type Namesrv struct {
	Index int
	// Addr is its remoting address (clients and brokers' proxies dial it);
	// Controller its raft address; Metrics its /healthz address.
	Addr, Controller, Metrics string
	Dir                       string
	// ACLFile is its --acl-file (Config.ACL; "" without one).
	ACLFile string
	Proc    *Proc
	health  *http.Client
}

// Group is one broker group (one broker name).
type Group struct {
	Name    string
	Brokers []*Broker
}

// Broker is one replica of a group. Its clients reach it through Client
// (the --advertise address), its replicas through HA (the --ha-advertise
// address, in front of HAListen), and it reaches name server i through
// ToNamesrv[i] (its --namesrv list).
type Broker struct {
	Group  string
	Index  int
	Listen string
	// HAListen is its --ha-listen; Metrics its /healthz address.
	HAListen, Metrics string
	// GRPC is its --grpc-listen (Config.GRPC; "" without one); ACLFile
	// its --acl-file (Config.ACL; "" without one).
	GRPC, ACLFile string
	Dir           string
	Client, HA    *proxy.Proxy
	ToNamesrv     []*proxy.Proxy
	Proc          *Proc
	health        *http.Client
}

// Addr is the address the broker registers and clients use.
func (b *Broker) Addr() string { return b.Client.Addr() }

// String names the broker as "broker-a/1".
func (b *Broker) String() string { return fmt.Sprintf("%s/%d", b.Group, b.Index) }

// DefaultCluster is the cluster name of a Config without one.
const DefaultCluster = "ChaosCluster"

func newProxy(t testing.TB, name, target string, log zerolog.Logger) *proxy.Proxy {
	t.Helper()
	p, err := proxy.New(name, "127.0.0.1:0", target, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Start starts 3 name servers with controllers, then the broker groups,
// and waits until every name server routes a master for every group.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Cluster == "" {
		cfg.Cluster = DefaultCluster
	}
	c := &Cluster{cfg: cfg, health: healthHTTP}
	if cfg.TLS != nil {
		c.health = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg.TLS}}
	}
	t.Cleanup(func() { c.logTails(t) }) // runs last: after every process is stopped
	var peers []string
	for i := 0; i < 3; i++ {
		n := &Namesrv{Index: i, Addr: processtest.ReserveAddr(t), Controller: processtest.ReserveAddr(t), Metrics: processtest.ReserveAddr(t),
			Dir: filepath.Join(cfg.Dir, fmt.Sprintf("ns%d", i)), health: c.health}
		peers = append(peers, n.Controller)
		c.Namesrvs = append(c.Namesrvs, n)
	}
	// The controllers prove a cluster secret on their raft connections,
	// as a deployment off loopback must.
	secret := filepath.Join(cfg.Dir, "controller.secret")
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("chaos-cluster-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Namesrvs {
		args := []string{"namesrv", "--listen", n.Addr, "--data", n.Dir, "--metrics-listen", n.Metrics, "--log-level", "info"}
		if !cfg.NoReplication {
			args = append(args, "--controller-listen", n.Controller, "--controller-peers", strings.Join(peers, ";"),
				"--controller-secret-file", secret)
		}
		if cfg.ACL != "" {
			n.ACLFile = c.writeACL(t, fmt.Sprintf("ns%d", n.Index))
			args = append(args, "--acl-file", n.ACLFile)
		}
		n.Proc = newProc(t, fmt.Sprintf("ns%d", n.Index), cfg.Bin, cfg.Env, append(args, cfg.NamesrvArgs...)...)
		if err := n.Proc.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Namesrvs {
		if err := n.WaitHealthy(30 * time.Second); err != nil {
			t.Fatalf("name server %d: %v\n%s", n.Index, err, n.Proc.Output())
		}
	}
	for g := 0; g < cfg.Groups; g++ {
		grp := &Group{Name: "broker-" + string(rune('a'+g))}
		for r := 0; r < cfg.Replicas; r++ {
			grp.Brokers = append(grp.Brokers, c.newBroker(t, grp.Name, r))
		}
		c.Groups = append(c.Groups, grp)
	}
	for _, g := range c.Groups {
		for _, b := range g.Brokers {
			if err := b.WaitHealthy(30 * time.Second); err != nil {
				t.Fatalf("broker %s: %v\n%s", b, err, b.Proc.Output())
			}
		}
		if _, err := c.WaitMaster(g, "", 30*time.Second); err != nil {
			t.Fatalf("group %s: %v", g.Name, err)
		}
	}
	return c
}

func (c *Cluster) newBroker(t testing.TB, group string, idx int) *Broker {
	b := &Broker{Group: group, Index: idx, Listen: processtest.ReserveAddr(t), HAListen: processtest.ReserveAddr(t), Metrics: processtest.ReserveAddr(t),
		Dir: filepath.Join(c.cfg.Dir, fmt.Sprintf("%s-%d", group, idx)), health: c.health}
	name := b.String()
	b.Client = newProxy(t, name+" client", b.Listen, c.cfg.Log)
	b.HA = newProxy(t, name+" ha", b.HAListen, c.cfg.Log)
	var ns []string
	for _, n := range c.Namesrvs {
		p := newProxy(t, fmt.Sprintf("%s ns%d", name, n.Index), n.Addr, c.cfg.Log)
		b.ToNamesrv = append(b.ToNamesrv, p)
		ns = append(ns, p.Addr())
	}
	args := []string{"broker", "--namesrv", strings.Join(ns, ";"), "--cluster", c.cfg.Cluster,
		"--broker-name", group, "--listen", b.Listen, "--advertise", b.Client.Addr(), "--data", b.Dir,
		"--metrics-listen", b.Metrics, "--log-level", "info"}
	if c.cfg.GRPC {
		b.GRPC = processtest.ReserveAddr(t)
		args = append(args, "--grpc-listen", b.GRPC)
	} else {
		args = append(args, "--grpc-listen=")
	}
	if c.cfg.ACL != "" {
		b.ACLFile = c.writeACL(t, name)
		args = append(args, "--acl-file", b.ACLFile)
	}
	if !c.cfg.NoReplication {
		// The group's brokers prove their replication secret to each
		// other on every HA connection, as a deployment off loopback must.
		// Written aside and renamed into place: a broker of the group that
		// is starting reads the file while the next one's start writes it
		// again, and must never see it truncated (0 bytes: refused).
		secret := filepath.Join(c.cfg.Dir, group+".ha.secret")
		tmp, err := os.CreateTemp(c.cfg.Dir, group+".ha.secret.*")
		if err != nil {
			t.Fatal(err)
		}
		_, werr := tmp.WriteString("chaos-" + group + "-ha-secret-0123456789\n")
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), 0o600)
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), secret)
		}
		if werr != nil {
			t.Fatal(werr)
		}
		args = append(args, "--ha-listen", b.HAListen, "--ha-advertise", b.HA.Addr(), "--ha-secret-file", secret,
			"--replication", "controller", "--min-in-sync-replicas", strconv.Itoa(max(c.cfg.MinInSync, 1)))
	}
	b.Proc = newProc(t, name, c.cfg.Bin, c.cfg.Env, append(args, c.cfg.BrokerArgs...)...)
	if err := b.Proc.Start(); err != nil {
		t.Fatal(err)
	}
	return b
}

// writeACL writes Config.ACL into a file of its own for process name and
// returns its path.
func (c *Cluster) writeACL(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(c.cfg.Dir, strings.ReplaceAll(name, "/", "-")+".plain_acl.yml")
	if err := os.WriteFile(path, []byte(c.cfg.ACL), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// NamesrvAddrs is the ';'-joined name server list for clients (direct,
// not through the brokers' proxies).
func (c *Cluster) NamesrvAddrs() []string {
	out := make([]string, len(c.Namesrvs))
	for i, n := range c.Namesrvs {
		out[i] = n.Addr
	}
	return out
}

// Brokers lists every broker of every group.
func (c *Cluster) Brokers() []*Broker {
	var out []*Broker
	for _, g := range c.Groups {
		out = append(out, g.Brokers...)
	}
	return out
}

var healthHTTP = &http.Client{Timeout: 2 * time.Second}

// waitHealthy polls addr's /healthz with hc (https:// when it has a TLS
// configuration) until 200, the process ends or the timeout passes.
func waitHealthy(hc *http.Client, addr string, p *Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	scheme := "http://"
	if tr, ok := hc.Transport.(*http.Transport); ok && tr.TLSClientConfig != nil {
		scheme = "https://"
	}
	for {
		resp, err := hc.Get(scheme + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("healthz: %s", resp.Status)
		}
		if !p.Running() {
			return fmt.Errorf("%s exited before it was healthy (last: %v)", p.Name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %v: %w", p.Name, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitHealthy waits for the broker's /healthz (after a restart).
func (b *Broker) WaitHealthy(timeout time.Duration) error {
	return waitHealthy(b.health, b.Metrics, b.Proc, timeout)
}

// WaitHealthy waits for the name server's /healthz (after a restart).
func (n *Namesrv) WaitHealthy(timeout time.Duration) error {
	return waitHealthy(n.health, n.Metrics, n.Proc, timeout)
}

// tailLines is how much of each process's output a failed test prints.
const tailLines = 40

// logTails prints, when the test failed, the last lines each process
// wrote: what explains the failure is usually there.
func (c *Cluster) logTails(t testing.TB) {
	if !t.Failed() {
		return
	}
	var procs []*Proc
	for _, n := range c.Namesrvs {
		procs = append(procs, n.Proc)
	}
	for _, g := range c.Groups {
		for _, b := range g.Brokers {
			procs = append(procs, b.Proc)
		}
	}
	for _, p := range procs {
		if p == nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(p.Output(), "\n"), "\n")
		t.Logf("--- the last %d lines of %s:\n%s", tailLines, p.Name, strings.Join(lines[max(0, len(lines)-tailLines):], "\n"))
	}
}
