package controller

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop"
)

var testSecret = []byte("0123456789abcdef-test-secret")

// acceptor is a secureLayer on a loopback listener whose accepted
// connections are read by the test: every first read's outcome goes to
// got (the bytes, or the error).
type acceptor struct {
	l   *secureLayer
	got chan readResult
	wg  sync.WaitGroup
}

type readResult struct {
	data []byte
	err  error
}

// startAcceptor serves sec as id self (its own address) with peers (self
// added).
func startAcceptor(t *testing.T, sec RaftSecurity, peers ...string) *acceptor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().String()
	a := &acceptor{l: newSecureLayer(ln, ln.Addr(), sec, self, append(peers, self), zerolog.Nop()), got: make(chan readResult, 16)}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			c, err := a.l.Accept()
			if err != nil {
				return
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				defer c.Close()
				buf := make([]byte, 64)
				n, err := c.Read(buf)
				a.got <- readResult{data: buf[:n], err: err}
			}()
		}
	}()
	t.Cleanup(func() { _ = a.l.Close(); a.wg.Wait() })
	return a
}

func (a *acceptor) addr() string { return a.l.ln.Addr().String() }

// next waits for the next connection's first read.
func (a *acceptor) next(t *testing.T) readResult {
	t.Helper()
	select {
	case r := <-a.got:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the acceptor's connection was not read within 5s")
	}
	return readResult{}
}

// dialer is a secureLayer used only to dial, as id self.
func dialer(t *testing.T, sec RaftSecurity, self string) *secureLayer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return newSecureLayer(ln, ln.Addr(), sec, self, nil, zerolog.Nop())
}

func TestSecretHandshakeAcceptsAPeer(t *testing.T) {
	a := startAcceptor(t, RaftSecurity{Secret: testSecret}, "10.0.0.1:9")
	c, err := dialer(t, RaftSecurity{Secret: testSecret}, "10.0.0.1:9").Dial(raft.ServerAddress(a.addr()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("raft bytes")); err != nil {
		t.Fatal(err)
	}
	if r := a.next(t); r.err != nil || string(r.data) != "raft bytes" {
		t.Fatalf("acceptor read %q %v", r.data, r.err)
	}
}

func TestSecretHandshakeRefusals(t *testing.T) {
	a := startAcceptor(t, RaftSecurity{Secret: testSecret}, "10.0.0.1:9")
	for _, tc := range []struct {
		name, self string
		secret     []byte
		want       string // in the dialer's error
	}{
		{"wrong secret", "10.0.0.1:9", []byte("another-secret-of-16+"), "proof does not match"},
		{"not a configured peer", "10.0.0.66:9", testSecret, "read challenge"}, // refused before any proof
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := a.l.refused.Load()
			_, err := dialer(t, RaftSecurity{Secret: tc.secret}, tc.self).Dial(raft.ServerAddress(a.addr()), time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("dial: %v, want an error with %q", err, tc.want)
			}
			if r := a.next(t); !errors.Is(r.err, io.EOF) || len(r.data) != 0 {
				t.Fatalf("acceptor read %q %v, want nothing and EOF", r.data, r.err)
			}
			if tc.name == "not a configured peer" && a.l.refused.Load() != before+1 {
				t.Fatalf("refusals %d -> %d", before, a.l.refused.Load())
			}
		})
	}
	t.Run("the peer is not who was dialed", func(t *testing.T) {
		l := dialer(t, RaftSecurity{Secret: testSecret}, "10.0.0.1:9")
		raw, err := net.Dial("tcp", a.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if err := secretClient(raw, l.sec.Secret, "10.0.0.1:9", "10.0.0.2:9"); err == nil || !strings.Contains(err.Error(), "says it is") {
			t.Fatalf("handshake with the wrong peer: %v", err)
		}
		_ = raw.Close()
		a.next(t)
	})
}

// recorder keeps what is written through it.
type recorder struct {
	net.Conn
	w bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) { r.w.Write(p); return r.Conn.Write(p) }

func TestSecretHandshakeReplayRefused(t *testing.T) {
	a := startAcceptor(t, RaftSecurity{Secret: testSecret}, "10.0.0.1:9")
	raw, err := net.Dial("tcp", a.addr())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Conn: raw}
	if err := secretClient(rec, testSecret, "10.0.0.1:9", a.addr()); err != nil {
		t.Fatal(err)
	}
	_ = raw.Close()
	a.next(t) // EOF after a good handshake
	// The recorded dialer side (hello + proof) on a new connection: the
	// acceptor's nonce differs, so the proof does not match.
	before := a.l.refused.Load()
	raw2, err := net.Dial("tcp", a.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw2.Close()
	if _, err := raw2.Write(rec.w.Bytes()); err != nil {
		t.Fatal(err)
	}
	_ = raw2.SetReadDeadline(time.Now().Add(5 * time.Second))
	challenge := make([]byte, nonceLen+1+len(a.addr())+macLen)
	if _, err := io.ReadFull(raw2, challenge); err != nil {
		t.Fatalf("read challenge: %v", err)
	}
	if n, err := raw2.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("replayed handshake answered %d bytes, %v; want the connection closed", n, err)
	}
	if r := a.next(t); !errors.Is(r.err, io.EOF) {
		t.Fatalf("acceptor read %q %v", r.data, r.err)
	}
	if a.l.refused.Load() != before+1 {
		t.Fatal("replay not counted as a refusal")
	}
}

func TestSilentConnectionClosedAtHandshakeDeadline(t *testing.T) {
	a := startAcceptor(t, RaftSecurity{Secret: testSecret, HandshakeTimeout: 200 * time.Millisecond})
	raw, err := net.Dial("tcp", a.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	start := time.Now()
	if r := a.next(t); !errors.Is(r.err, io.EOF) {
		t.Fatalf("acceptor read %q %v", r.data, r.err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("silent client read: %v, want EOF (closed)", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("closed after %v", d)
	}
}

func TestRaftSecurityValidate(t *testing.T) {
	for _, tc := range []struct {
		listen string
		sec    RaftSecurity
		mode   string // "" = refused
	}{
		{"10.0.0.1:7000", RaftSecurity{}, ""},
		{"0.0.0.0:7000", RaftSecurity{}, ""},
		{":7000", RaftSecurity{}, ""},
		{"10.0.0.1:7000", RaftSecurity{Insecure: true}, SecurityInsecure},
		{"127.0.0.1:7000", RaftSecurity{}, SecurityLoopback},
		{"[::1]:7000", RaftSecurity{}, SecurityLoopback},
		{"localhost:7000", RaftSecurity{}, SecurityLoopback},
		{"10.0.0.1:7000", RaftSecurity{Secret: testSecret}, SecuritySecret},
		{"10.0.0.1:7000", RaftSecurity{Secret: []byte("short")}, ""},
	} {
		sec := tc.sec
		sec.Loopback = netloop.LoopbackListen
		mode, err := sec.validate(tc.listen)
		if mode != tc.mode || (err == nil) != (tc.mode != "") {
			t.Errorf("%s %+v: %q %v, want %q", tc.listen, tc.sec, mode, err, tc.mode)
		}
	}
	// Without a loopback check no address is taken for loopback.
	if mode, err := (&RaftSecurity{}).validate("127.0.0.1:7000"); err == nil {
		t.Errorf("no Loopback: 127.0.0.1 taken as %q", mode)
	}
}

// testCA makes a CA and issues leaf certificates for hosts.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, ips ...string) *tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "controller"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func (ca *testCA) sec(cert *tls.Certificate, secret []byte) RaftSecurity {
	return RaftSecurity{Secret: secret, TLS: &RaftTLS{
		Certificate: func() *tls.Certificate { return cert },
		CAs:         func() *x509.CertPool { return ca.pool },
	}}
}

func TestMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	good := ca.issue(t, "127.0.0.1")
	for _, secret := range [][]byte{nil, testSecret} {
		a := startAcceptor(t, ca.sec(good, secret))
		// The dialer's id: an address on 127.0.0.1, a configured peer
		// (the acceptor's own, as its only peer).
		self := a.addr()
		c, err := dialer(t, ca.sec(good, secret), self).Dial(raft.ServerAddress(a.addr()), time.Second)
		if err != nil {
			t.Fatalf("secret %t: %v", secret != nil, err)
		}
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if r := a.next(t); r.err != nil || string(r.data) != "x" {
			t.Fatalf("secret %t: acceptor read %q %v", secret != nil, r.data, r.err)
		}
		_ = c.Close()
	}
	a := startAcceptor(t, ca.sec(good, nil))
	for name, sec := range map[string]RaftSecurity{
		"another CA":                newTestCA(t).sec(newTestCA(t).issue(t, "127.0.0.1"), nil),
		"a certificate for no peer": ca.sec(ca.issue(t, "10.9.9.9"), nil),
	} {
		// TLS 1.3: the dialer's handshake may end before the acceptor
		// checked its certificate; then its first read finds the
		// connection closed.
		if c, err := dialer(t, sec, a.addr()).Dial(raft.ServerAddress(a.addr()), time.Second); err == nil {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s: the acceptor kept the connection: %v", name, err)
			}
			_ = c.Close()
		}
		if r := a.next(t); !errors.Is(r.err, io.EOF) {
			t.Errorf("%s: acceptor read %q %v", name, r.data, r.err)
		}
	}
}
