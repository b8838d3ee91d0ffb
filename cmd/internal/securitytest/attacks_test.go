package securitytest_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the RocketMQ 5 SDKs sign with HMAC-SHA1
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/wheelmq/wheelmq/actors/challenge"
	"github.com/wheelmq/wheelmq/actors/controller"
	"github.com/wheelmq/wheelmq/cmd/internal/chaos/cluster"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/ha"
)

// TestProductionChecklistUnderAttack starts the production checklist's
// deployment (three name servers with controllers, a group of three
// brokers; TLS enforcing with a CA, an ACL with an admin and an
// application account, the controllers' and the group's secrets, console
// hosts, idle timeout) and, while official Go clients send with the
// application's account over TLS, attacks it at once from connections that
// are none of its peers:
//   - forged raft AppendEntries and a RequestVote storm on every
//     controller's raft port;
//   - strangers on the master's HA port (raw TCP, TLS without a client
//     certificate, a wrong secret);
//   - a fake master, a listener speaking the master side with a wrong
//     secret, which the forged raft entries try to name;
//   - the master's ACL file truncated in place, then rewritten;
//   - a gRPC call signed 20 minutes ago;
//   - a console request under a foreign Host.
//
// Every send during the attacks is acknowledged, no leader or master
// changes, nothing forged is applied, and each attack gets its refusal.
func TestProductionChecklistUnderAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six processes")
	}
	began := time.Now()
	d := startProduction(t)
	g := d.Groups[0]
	master, err := d.Master(g)
	if err != nil || master == nil {
		t.Fatalf("master of %s: %v %v", g.Name, master, err)
	}
	leader, err := d.ControllerLeader()
	if err != nil {
		t.Fatal(err)
	}
	d.createTopic(t, master.Addr())
	w := startWorkload(t, d.NamesrvAddrs(), 2)
	t.Logf("deployment up in %v: master %s, controller leader ns%d", time.Since(began).Round(time.Millisecond), master, leader.Index)

	fake := startFakeMaster(t, master)
	attacks := []struct {
		name string
		run  func(t *testing.T) string
	}{
		{"raft: forged AppendEntries and a RequestVote storm on every controller", func(t *testing.T) string {
			return d.attackRaft(t, fake.Addr().String())
		}},
		{"HA: strangers on the master's HA port", func(t *testing.T) string { return d.attackHA(t, master) }},
		{"ACL: the master's file truncated in place", func(t *testing.T) string { return d.attackACL(t, master, w) }},
		{"gRPC: a call signed 20 minutes ago", func(t *testing.T) string { return d.attackGRPC(t, master) }},
		{"console: a foreign Host", func(t *testing.T) string { return d.attackConsole(t, master) }},
	}
	attacked := time.Now()
	var wg sync.WaitGroup
	outcomes := make([]string, len(attacks))
	for i, a := range attacks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = a.run(t)
		}()
	}
	wg.Wait()
	if !w.waitAcked(time.Now()) {
		t.Error("no send acknowledged after the attacks")
	}
	w.halt()
	for i, a := range attacks {
		t.Logf("attack %q: %s", a.name, outcomes[i])
	}

	// The fake master: nothing named it (the forged entries that would
	// were refused with the raft port's handshake), so no broker dialed it.
	if n := fake.conns.Load(); n != 0 {
		t.Errorf("fake master: %d connections from the brokers", n)
	}
	t.Logf("attack %q: %d connections over %v", "fake master named by nobody (wrong secret)", fake.conns.Load(), time.Since(attacked).Round(time.Millisecond))

	if m, err := d.Master(g); err != nil || m != master {
		t.Errorf("master after the attacks: %v %v, want %s", m, err, master)
	}
	if l, err := d.ControllerLeader(); err != nil || l != leader {
		t.Errorf("controller leader after the attacks: %v %v, want ns%d", l, err, leader.Index)
	}
	acked := w.ackedSince(attacked)
	w.mu.Lock()
	failed := w.failed
	w.mu.Unlock()
	for _, f := range failed {
		t.Errorf("send failed: %s", f)
	}
	t.Logf("workload: %d sends acknowledged during %v of attacks, %d failed; whole test %v",
		acked, time.Since(attacked).Round(time.Millisecond), len(failed), time.Since(began).Round(time.Millisecond))
}

// plainLayer is a raft StreamLayer that dials with no credentials: no
// cluster secret, no client certificate.
type plainLayer struct{ net.Listener }

func (plainLayer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(a), timeout)
}

// attackRaft forges, on every controller's raft port, every 150 ms for
// 2 s: an AppendEntries from a made-up leader with a far higher term whose
// committed entries register a replica of the group at fakeMaster and elect
// it (PrevLogEntry 0: it needs no knowledge of the log), and a RequestVote
// with LeadershipTransfer, each in another configured peer's name. No RPC
// may be answered, and every controller must count refusals.
func (d *deployment) attackRaft(t *testing.T, fakeMaster string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Error(err)
		return "no listener"
	}
	tr := raft.NewNetworkTransport(plainLayer{ln}, 1, time.Second, io.Discard)
	defer tr.Close()
	var entries []*raft.Log
	for i, cmd := range []controller.Command{
		{Op: controller.OpRegister, Cluster: "ProdCluster", BrokerName: d.Groups[0].Name, ReplicaID: 9, Addr: fakeMaster, HAAddr: fakeMaster},
		{Op: controller.OpElect, Cluster: "ProdCluster", BrokerName: d.Groups[0].Name, Designated: 9,
			Alive: []controller.Candidate{{ID: 9, Epoch: 1 << 20, MaxOffset: 1 << 40}}},
	} {
		data, _ := json.Marshal(cmd)
		entries = append(entries, &raft.Log{Index: uint64(i + 1), Term: 1 << 32, Type: raft.LogCommand, Data: data})
	}
	leader, err := d.ControllerLeader()
	if err != nil {
		t.Error(err)
		return "no controller leader"
	}
	epoch0, master0, _ := d.replicaInfo(t, leader.Addr)
	before := d.raftRefused(t)
	sent, answered := 0, 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(150 * time.Millisecond) {
		for i, n := range d.Namesrvs {
			claim := d.Namesrvs[(i+1)%len(d.Namesrvs)].Controller // a configured peer's id
			hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(claim), Addr: []byte(claim)}
			ae := &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 1 << 32, Entries: entries, LeaderCommitIndex: uint64(len(entries))}
			if tr.AppendEntries(raft.ServerID(n.Controller), raft.ServerAddress(n.Controller), ae, &raft.AppendEntriesResponse{}) == nil {
				answered++
			}
			rv := &raft.RequestVoteRequest{RPCHeader: hdr, Term: 1<<32 + 1, LastLogIndex: 1 << 40, LastLogTerm: 1 << 32, LeadershipTransfer: true}
			if tr.RequestVote(raft.ServerID(n.Controller), raft.ServerAddress(n.Controller), rv, &raft.RequestVoteResponse{}) == nil {
				answered++
			}
			sent += 2
		}
	}
	if answered != 0 {
		t.Errorf("raft: %d of %d forged RPCs answered", answered, sent)
	}
	after := d.raftRefused(t)
	for i := range after {
		if after[i] <= before[i] {
			t.Errorf("raft: ns%d counted no refusal (%v -> %v)", i, before[i], after[i])
		}
	}
	// Nothing forged was applied: the group's master and epoch are the
	// ones before, and no controller knows the fake master's address.
	epoch1, master1, replicas := d.replicaInfo(t, leader.Addr)
	if epoch1 != epoch0 || master1 != master0 || epoch1 == "" {
		t.Errorf("raft: the group's master went from %q (epoch %q) to %q (epoch %q)", master0, epoch0, master1, epoch1)
	}
	if strings.Contains(replicas, fakeMaster) {
		t.Errorf("raft: the controller knows the fake master: %s", replicas)
	}
	return fmt.Sprintf("%d forged RPCs, %d answered; refusals counted per controller %v -> %v; master %s epoch %s before and after",
		sent, answered, before, after, master1, epoch1)
}

// replicaInfo asks the controller at namesrv (the leader) for the group's
// master and epoch (1004 GET_REPLICA_INFO) and its replicas (1006
// GET_SYNC_STATE_DATA, the body as text).
func (d *deployment) replicaInfo(t *testing.T, namesrv string) (epoch, master, replicas string) {
	g := d.Groups[0].Name
	r := d.invoke(t, namesrv, remoting.NewRequest(1004, map[string]string{"brokerName": g, "clusterName": "ProdCluster"}, nil), admin)
	if r.Code != remoting.Success {
		t.Errorf("GET_REPLICA_INFO: %d %s", r.Code, r.Remark)
	}
	body, _ := json.Marshal([]string{g})
	s := d.invoke(t, namesrv, remoting.NewRequest(1006, nil, body), admin)
	if s.Code != remoting.Success {
		t.Errorf("GET_SYNC_STATE_DATA: %d %s", s.Code, s.Remark)
	}
	return r.ExtFields["masterEpoch"], r.ExtFields["masterAddress"], string(s.Body)
}

// raftRefused is every controller's wheelmq_controller_raft_refused_total.
func (d *deployment) raftRefused(t *testing.T) []float64 {
	out := make([]float64, len(d.Namesrvs))
	for i, n := range d.Namesrvs {
		out[i] = d.metric(t, n.Metrics, "wheelmq_controller_raft_refused_total")
	}
	return out
}

// readAll writes hello to c and reads what comes until the master closes
// the connection (or 5 s pass).
func readAll(c net.Conn, hello []byte) ([]byte, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(hello); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(c)
	if errors.Is(err, io.EOF) || isReset(err) {
		err = nil
	}
	return b, err
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// attackHA connects to the master's HA port as a stranger: raw TCP
// (the port speaks TLS only), TLS without a client certificate sending
// noise, and TLS running the challenge with a wrong secret. It may read
// nothing but the fixed refusal (or, on raw TCP, a TLS alert), and the
// master's own proof it cannot check.
func (d *deployment) attackHA(t *testing.T, m *cluster.Broker) string {
	noise := []byte("GET / HTTP/1.0\r\n\r\n")
	var out []string
	raw, err := net.DialTimeout("tcp", m.HAListen, 2*time.Second)
	if err != nil {
		t.Errorf("HA raw: %v", err)
		return "no connection"
	}
	got, err := readAll(raw, noise)
	_ = raw.Close()
	switch {
	case err != nil:
		t.Errorf("HA raw: %v", err)
	case len(got) == 0:
		out = append(out, "raw TCP: closed, nothing read")
	case got[0] == 0x15 && len(got) <= 7: // a TLS alert record
		out = append(out, fmt.Sprintf("raw TCP: a TLS alert (%x), closed", got))
	case string(got) == string(ha.Refusal()):
		out = append(out, "raw TCP: the fixed refusal")
	default:
		t.Errorf("HA raw: read %x", got)
	}

	stranger := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a stranger checks nothing, and has no certificate
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", m.HAListen, stranger)
	if err != nil {
		out = append(out, "TLS without a client certificate: refused at the handshake ("+err.Error()+")")
	} else {
		got, err := readAll(tc, noise)
		_ = tc.Close()
		if err != nil || string(got) != string(ha.Refusal()) {
			t.Errorf("HA over TLS, noise: read %x (%v), want the fixed refusal %x", got, err, ha.Refusal())
		} else {
			out = append(out, fmt.Sprintf("TLS without a client certificate: the fixed refusal (%d bytes, every number zero)", len(got)))
		}
	}

	tc, err = tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", m.HAListen, stranger)
	if err == nil {
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := challenge.TLSBinding(tc.ConnectionState(), ha.TLSExporterLabel)
		p := challenge.Params{Magic: ha.ChallengeMagic, Label: ha.ChallengeLabel, Secret: []byte("not-the-group-secret-0123456789"), Binding: b}
		// It names the group as the stream does (cluster/broker name, both
		// public in routes) and claims replica id 7.
		group := haGroup(m)
		hs := ha.AppendFrame(nil, ha.Handshake{Version: ha.Version, ReplicaID: 7})
		rc := &recordingConn{Conn: tc}
		err = challenge.Dial(rc, p, ha.ReplicaPeerID(group, 7), ha.MasterPeerID(group, m.HA.Addr()), hs)
		_ = tc.Close()
		switch {
		case errors.Is(err, challenge.ErrBadProof):
			out = append(out, "TLS with a wrong secret: the master's proof (nonce, its id, its MAC) does not check, nothing of the log sent")
		default:
			t.Errorf("HA over TLS, wrong secret: %v after reading %x, want the master's proof unverifiable", err, rc.read.Bytes())
		}
	}
	refused := d.metric(t, m.Metrics, "wheelmq_replication_refused_total")
	if refused == 0 {
		t.Error("HA: the master counted no refusal")
	}
	return strings.Join(out, "; ") + fmt.Sprintf("; wheelmq_replication_refused_total %v", refused)
}

// haGroup is the group name the HA stream proves: cluster/broker name.
func haGroup(b *cluster.Broker) string { return "ProdCluster/" + b.Group }

// recordingConn keeps what was read from it.
type recordingConn struct {
	net.Conn
	read bytes.Buffer
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Write(p[:n])
	return n, err
}

// fakeMaster is a listener speaking the master side of the HA challenge
// with a wrong secret. Nothing names it: the only way to would be forged
// controller entries (attackRaft tries them), which the raft port's
// handshake refuses. It counts the connections it gets.
type fakeMaster struct {
	net.Listener
	conns atomic.Int64
}

func startFakeMaster(t *testing.T, b *cluster.Broker) *fakeMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMaster{Listener: ln}
	p := challenge.Params{Magic: ha.ChallengeMagic, Label: ha.ChallengeLabel, Secret: []byte("the-fake-masters-own-secret-0123")}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = challenge.Accept(c, p, ha.MasterPeerID(haGroup(b), ln.Addr().String()), func(string) bool { return true })
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return f
}

// attackACL truncates the master's ACL file in place and leaves it empty
// until the reload refused it, as a tool that truncates and then rewrites
// would (slowly); sends must go on being acknowledged meanwhile. Then the
// file is rewritten.
func (d *deployment) attackACL(t *testing.T, m *cluster.Broker, w *workload) string {
	before := d.metric(t, m.Metrics, "wheelmq_acl_load_errors_total")
	if err := os.Truncate(m.ACLFile, 0); err != nil {
		t.Error(err)
		return "not truncated"
	}
	var errs float64
	deadline := time.Now().Add(10 * time.Second)
	for errs = before; errs <= before && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		errs = d.metric(t, m.Metrics, "wheelmq_acl_load_errors_total")
	}
	if errs <= before {
		t.Errorf("ACL: the empty file's refusal not counted within 10 s (%v)", errs)
	}
	refused := time.Now()
	ok := w.waitAcked(refused)
	if !ok {
		t.Error("ACL: no send acknowledged while the file was empty")
	}
	n := w.ackedSince(refused)
	if err := writeInPlace(m.ACLFile, []byte(aclFile)); err != nil {
		t.Error(err)
	}
	stale := d.metric(t, m.Metrics, "wheelmq_acl_config_stale")
	for deadline := time.Now().Add(10 * time.Second); stale != 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		stale = d.metric(t, m.Metrics, "wheelmq_acl_config_stale")
	}
	if stale != 0 {
		t.Error("ACL: the rewritten file still not the version in force after 10 s")
	}
	return fmt.Sprintf("reload refused (wheelmq_acl_load_errors_total %v -> %v), %d sends acknowledged with the file empty; rewritten, in force again", before, errs, n)
}

// attackGRPC asks the master's gRPC endpoint (TLS, verified) for the
// topic's route signed by the application's account 20 minutes ago: it must
// be refused, and the same call signed now answered.
func (d *deployment) attackGRPC(t *testing.T, m *cluster.Broker) string {
	conn, err := grpc.NewClient(m.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(d.pki.client())))
	if err != nil {
		t.Error(err)
		return "no client"
	}
	defer conn.Close()
	c := v2.NewMessagingServiceClient(conn)
	route := func(at time.Time) (*v2.Status, error) {
		date := at.UTC().Format("20060102T150405Z")
		mac := hmac.New(sha1.New, []byte(app.SecretKey))
		mac.Write([]byte(date))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "attacker@1@1@"+app.AccessKey, "x-mq-language", "GO",
			"x-mq-protocol", "v2", "x-mq-date-time", date,
			"authorization", "MQv2-HMAC-SHA1 Credential="+app.AccessKey+"//Rocketmq, SignedHeaders=x-mq-date-time, Signature="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
		return resp.GetStatus(), err
	}
	stale, err := route(time.Now().Add(-20 * time.Minute))
	if err != nil || stale.GetCode() != v2.Code_UNAUTHORIZED {
		t.Errorf("gRPC signed 20 minutes ago: %v %v, want UNAUTHORIZED", stale, err)
	}
	fresh, err := route(time.Now())
	if err != nil || fresh.GetCode() != v2.Code_OK {
		t.Errorf("gRPC signed now: %v %v, want OK", fresh, err)
	}
	n := d.metric(t, m.Metrics, "wheelmq_auth_refused_total", `reason="stale_date"`)
	if n == 0 {
		t.Error("gRPC: no stale_date refusal counted")
	}
	return fmt.Sprintf("signed 20 min ago: %v %q; signed now: %v; stale_date refusals %v", stale.GetCode(), stale.GetMessage(), fresh.GetCode(), n)
}

// attackConsole asks the master's console (HTTPS) for its front page under
// a Host that is neither its address nor a --console-hosts name (what a DNS
// rebinding page sends): 421; under the listed name it is served.
func (d *deployment) attackConsole(t *testing.T, m *cluster.Broker) string {
	get := func(host string) (int, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+m.Metrics+"/", nil)
		if err != nil {
			return 0, err
		}
		req.Host = host
		resp, err := d.https.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	_, port, _ := net.SplitHostPort(m.Metrics)
	foreign, err := get("rebound.attacker.example:" + port)
	if err != nil || foreign != http.StatusMisdirectedRequest {
		t.Errorf("console under a foreign Host: %d %v, want 421", foreign, err)
	}
	listed, err := get(consoleHost + ":" + port)
	if err != nil || listed == http.StatusMisdirectedRequest {
		t.Errorf("console under %s: %d %v", consoleHost, listed, err)
	}
	return fmt.Sprintf("foreign Host: %d; Host %s: %d", foreign, consoleHost, listed)
}
