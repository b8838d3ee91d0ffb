package replication

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	mrand "math/rand"
	"net"
	"testing"
	"time"
)

// testTLS returns one config for both ends: a self-signed certificate for
// 127.0.0.1, trusted as the root.
func testTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wheelmq-ha-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs:      pool, MinVersion: tls.VersionTLS13,
	}
}

func TestTLSStream(t *testing.T) {
	cfg := testTLS(t)
	m, rs := group(t, 1, []int64{1, 2}, func(o *Options) { o.TLS = cfg })
	end := m.appendRecords(mrand.New(mrand.NewSource(8)), 50)
	waitFor(t, "confirmed over TLS", 5*time.Second, func() bool { return m.svc.Confirmed() == end })
	sameLog(t, m, rs[0])
	// A replica speaking plain TCP to the TLS port gets nowhere.
	plain := newNode(t, masterState(9), nil)
	plain.follow(m, 3, 1)
	time.Sleep(300 * time.Millisecond)
	if plain.store.CommitLog.MaxOffset() != 0 {
		t.Fatal("a plain-TCP replica received bytes from the TLS port")
	}
}

// TestWrongSecretRefused: a replica with another secret (or of another
// group) gets nothing.
func TestWrongSecretRefused(t *testing.T) {
	m, _ := group(t, 0, []int64{1}, nil)
	m.appendRecords(mrand.New(mrand.NewSource(9)), 5)
	r := newNode(t, masterState(9), func(o *Options) { o.Secret = []byte("another-secret-0123456789") })
	r.follow(m, 2, 1)
	time.Sleep(300 * time.Millisecond)
	if r.store.CommitLog.MaxOffset() != 0 || len(m.svc.Replicas()) != 0 {
		t.Fatal("a replica with another secret was served")
	}
	g := newNode(t, masterState(9), func(o *Options) { o.Group = "test-cluster/broker-b" })
	g.follow(m, 2, 1)
	time.Sleep(300 * time.Millisecond)
	if g.store.CommitLog.MaxOffset() != 0 || len(m.svc.Replicas()) != 0 {
		t.Fatal("a replica of another group was served")
	}
}

// TestVerifyMasterRefusal: a replica whose VerifyMaster refuses the
// master's TLS connection takes nothing from it (and is asked about the
// address it dialed).
func TestVerifyMasterRefusal(t *testing.T) {
	cfg := testTLS(t)
	m, _ := group(t, 0, []int64{1}, func(o *Options) { o.TLS = cfg })
	m.appendRecords(mrand.New(mrand.NewSource(10)), 5)
	asked := make(chan string, 16)
	r := newNode(t, masterState(9), func(o *Options) {
		o.TLS = cfg
		o.VerifyMaster = func(_ tls.ConnectionState, addr string) error {
			select {
			case asked <- addr:
			default:
			}
			return errors.New("not our CA")
		}
	})
	r.follow(m, 2, 1)
	select {
	case addr := <-asked:
		if addr != m.svc.Addr() {
			t.Fatalf("VerifyMaster asked about %s, the master is %s", addr, m.svc.Addr())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("VerifyMaster not called")
	}
	time.Sleep(200 * time.Millisecond)
	if r.store.CommitLog.MaxOffset() != 0 || len(m.svc.Replicas()) != 0 {
		t.Fatal("a replica took data from a master it did not verify")
	}
}
