package process_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/cmd/internal/tlsconf"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// insecure is what RocketMQ's clients use: TLS without verifying the
// server.
func insecure() *tls.Config { return remoting.InsecureTLS() }

// startTLSNode starts a node whose ports run in mode, with tc's other
// settings; Start's own requests speak TLS unless the mode is disabled.
func startTLSNode(t testing.TB, tc process.TLSConfig) *process.Node {
	t.Helper()
	o := processtest.Options{MutateNode: func(c *process.Config) { c.TLS = tc }}
	if tc.Mode == netloop.TLSEnforcing {
		o.ClientTLS = insecure()
	}
	return processtest.Start(t, o)
}

// dialTLS dials addr with cfg (nil: plaintext).
func dialTLS(t *testing.T, addr string, cfg *tls.Config) (*remoting.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{TLS: cfg})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// sendAndPull creates topic through c, waits for its route over ns, sends
// a message and pulls it back: SEND_MESSAGE and PULL_MESSAGE answered.
func sendAndPull(t *testing.T, c, ns *remoting.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("create topic: %v %+v", err, resp)
	}
	for {
		resp, err := ns.Invoke(ctx, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			t.Fatalf("route over TLS: %v", err)
		}
		if resp.Code == remoting.Success {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err = c.Invoke(ctx, processtest.SendRequest(topic, 0, []byte("over tls"), nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("SEND_MESSAGE: %v %+v", err, resp)
	}
	group := processtest.Unique("g")
	for { // the send is answered once stored; its queue entry follows
		resp, err = c.Invoke(ctx, processtest.PullRequest(group, topic, 0, 0, 8))
		if err != nil || (resp.Code != remoting.Success && resp.Code != remoting.PullNotFound) {
			t.Fatalf("PULL_MESSAGE: %v %+v", err, resp)
		}
		if resp.Code == remoting.Success {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	recs, err := processtest.DecodeMessages(resp.Body)
	if err != nil || len(recs) != 1 || string(recs[0].Body) != "over tls" {
		t.Fatalf("pulled %d records (%v), want the message sent", len(recs), err)
	}
}

// refused checks that a plaintext request to addr gets no answer: the
// connection is closed.
func refused(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frame, _ := remoting.EncodeFrame(remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatalf("plaintext to %s answered, want the connection closed", addr)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("plaintext to %s: connection left open", addr)
	}
}

// TestTLSEnforcingServesEveryPort runs a node that enforces TLS with its
// self-signed certificate: the broker registers over TLS, a crypto/tls
// client creates a topic, finds its route at the name server, sends and
// pulls; plaintext is refused on both ports and counted.
func TestTLSEnforcingServesEveryPort(t *testing.T) {
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir, ClientTLS: insecure(), MutateNode: func(c *process.Config) {
		c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, Namesrv: true}
	}})
	c, err := dialTLS(t, n.BrokerAddr(), insecure())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := dialTLS(t, n.NamesrvAddr(), insecure())
	if err != nil {
		t.Fatal(err)
	}
	sendAndPull(t, c, ns, processtest.Unique("tls"))

	// The certificate served is the self-signed one in <data>/tls.
	conn, err := tls.Dial("tcp", n.BrokerAddr(), insecure())
	if err != nil {
		t.Fatal(err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	_ = conn.Close()
	if got := tlsconf.Fingerprint(leaf); got != n.TLSFingerprint() || got == "" {
		t.Fatalf("served %s, node reports %s", got, n.TLSFingerprint())
	}
	if st, err := os.Stat(filepath.Join(dir, "tls", tlsconf.SelfSignedKey)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("self-signed key: %v %v", st, err)
	}
	if conn.ConnectionState().Version < tls.VersionTLS12 {
		t.Fatal("below TLS 1.2")
	}
	old := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11} //nolint:gosec // the test
	if c, err := tls.Dial("tcp", n.BrokerAddr(), old); err == nil {
		c.Close()
		t.Fatal("TLS 1.1 accepted")
	}

	refused(t, n.BrokerAddr())
	refused(t, n.NamesrvAddr())
	if st := n.Broker().NetStats(); st.RefusedBy[netloop.RefusedPlaintext] != 1 || st.TLS < 2 || st.HandshakeFailures != 1 {
		t.Fatalf("broker port stats %+v, want one plaintext refusal, the TLS connections, the TLS 1.1 failure", st)
	}
}

// TestTLSPermissiveServesBoth serves TLS and plaintext clients side by
// side on the same ports.
func TestTLSPermissiveServesBoth(t *testing.T) {
	n := startTLSNode(t, process.TLSConfig{Mode: netloop.TLSPermissive})
	c, err := dialTLS(t, n.BrokerAddr(), insecure())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := dialTLS(t, n.NamesrvAddr(), insecure())
	if err != nil {
		t.Fatal(err)
	}
	sendAndPull(t, c, ns, processtest.Unique("tls"))
	pc, err := dialTLS(t, n.BrokerAddr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pns, err := dialTLS(t, n.NamesrvAddr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sendAndPull(t, pc, pns, processtest.Unique("plain"))
	if st := n.Broker().NetStats(); st.TLS != 1 || st.Plaintext != 1 {
		t.Fatalf("broker port stats %+v, want a TLS connection beside the plaintext ones", st)
	}
}

// TestTLSClientCertificateRequired requires client certificates of a CA:
// a client without one and one of another CA are refused; one with a
// certificate of the CA is served; the broker registers with its own
// name server with its own certificate.
func TestTLSClientCertificateRequired(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	caPath := filepath.Join(dir, "clients-ca.pem")
	writePEM(t, caPath, "CERTIFICATE", ca.cert.Raw)
	client := ca.issue(t, "client-1")
	stranger := newTestCA(t).issue(t, "stranger")

	with := insecure()
	with.Certificates = []tls.Certificate{client}
	n := processtest.Start(t, processtest.Options{ClientTLS: with, MutateNode: func(c *process.Config) {
		c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, Namesrv: true, ClientCAFile: caPath}
	}})
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another CA's": {stranger}} {
		cfg := insecure()
		cfg.Certificates = certs
		c, err := dialTLS(t, n.BrokerAddr(), cfg)
		if err == nil {
			_, err = c.Invoke(context.Background(), remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		}
		if err == nil {
			t.Fatalf("%s: served, want refused", name)
		}
	}
	c, err := dialTLS(t, n.BrokerAddr(), with)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := dialTLS(t, n.NamesrvAddr(), with)
	if err != nil {
		t.Fatal(err)
	}
	sendAndPull(t, c, ns, processtest.Unique("mtls"))
}

// TestTLSCertificateReload replaces the certificate files while the node
// runs: new handshakes get the new certificate within a few polls, an open
// connection keeps working, and a broken file keeps the last good one.
func TestTLSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	ca := newTestCA(t)
	first := ca.issue(t, "first")
	writePair(t, certPath, keyPath, first)
	n := startTLSNode(t, process.TLSConfig{Mode: netloop.TLSEnforcing, CertFile: certPath, KeyFile: keyPath,
		Namesrv: true, Poll: 20 * time.Millisecond})
	servedCN := func() string {
		conn, err := tls.Dial("tcp", n.BrokerAddr(), insecure())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := servedCN(); cn != "first" {
		t.Fatalf("served %q, want first", cn)
	}
	open, err := dialTLS(t, n.BrokerAddr(), insecure())
	if err != nil {
		t.Fatal(err)
	}
	writePair(t, certPath, keyPath, ca.issue(t, "second"))
	deadline := time.Now().Add(10 * time.Second)
	for servedCN() != "second" {
		if time.Now().After(deadline) {
			t.Fatal("the new certificate is not served")
		}
		time.Sleep(20 * time.Millisecond)
	}
	failures := n.TLSReloader().Failures() // a poll between key and certificate may have seen a mismatch
	if err := vfs.WriteFileAtomic(nil, certPath, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for n.TLSReloader().Failures() == failures {
		if time.Now().After(deadline) {
			t.Fatal("the broken file was not looked at")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if cn := servedCN(); cn != "second" {
		t.Fatalf("after a broken file: served %q, want the last good one", cn)
	}
	resp, err := open.Invoke(context.Background(), remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	if err != nil {
		t.Fatalf("the connection opened before the reload: %v", err)
	}
	_ = resp
}

// TestTLSStalledHandshakeFreed opens a TLS handshake on the broker and
// stops half-way: it is closed after the handshake timeout and leaves no
// goroutine.
func TestTLSStalledHandshakeFreed(t *testing.T) {
	n := startTLSNode(t, process.TLSConfig{Mode: netloop.TLSPermissive, HandshakeTimeout: 300 * time.Millisecond})
	conn, err := net.DialTimeout("tcp", n.BrokerAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0x16, 0x03, 0x01}); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Timeout() {
			t.Fatalf("stalled handshake: %v, want the connection closed", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for st := n.Broker().NetStats(); st.TLSOpen != 0 || st.HandshakeFailures != 1; st = n.Broker().NetStats() {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want the handshake failed and its goroutine gone", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testCA is a CA for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// issue makes a certificate for cn, fit for servers and clients.
func (ca *testCA) issue(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := vfs.WriteFileAtomic(nil, path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writePair writes c's certificate and key, each replaced by a rename.
func writePair(t *testing.T, certPath, keyPath string, c tls.Certificate) {
	t.Helper()
	pk, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyPath, "PRIVATE KEY", pk)
	writePEM(t, certPath, "CERTIFICATE", c.Certificate[0])
}
