package netloop

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// testPKI is a CA with a server and a client certificate it signed.
type testPKI struct {
	caPool *x509.CertPool
	server tls.Certificate
	client tls.Certificate
}

var testPKIOnce struct {
	sync.Mutex
	pki *testPKI
}

// testCerts returns the package's test PKI, made on first use.
func testCerts(t testing.TB) *testPKI {
	t.Helper()
	testPKIOnce.Lock()
	defer testPKIOnce.Unlock()
	if testPKIOnce.pki == nil {
		testPKIOnce.pki = newTestPKI(t)
	}
	return testPKIOnce.pki
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testPKI{caPool: pool, server: leaf(2, "server", x509.ExtKeyUsageServerAuth),
		client: leaf(3, "client", x509.ExtKeyUsageClientAuth)}
}

// serverTLS is a port's TLS configuration with the test server
// certificate.
func serverTLS(t testing.TB, mode TLSMode) TLS {
	return TLS{Mode: mode, Config: &tls.Config{
		Certificates: []tls.Certificate{testCerts(t).server}, MinVersion: tls.VersionTLS12,
	}}
}

// clientTLS is a client configuration that verifies the test server.
func clientTLS(t testing.TB) *tls.Config {
	return &tls.Config{RootCAs: testCerts(t).caPool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
}

// startTLSServer starts a server with two event loops and cfg's TLS.
func startTLSServer(t testing.TB, cfg Config, h Handler) *Server {
	t.Helper()
	cfg.Name, cfg.Addr = "test", "127.0.0.1:0"
	if cfg.NumEventLoop == 0 {
		cfg.NumEventLoop = 2
	}
	s := NewServer(cfg, h)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}

// tlsDial dials addr with a TLS remoting client.
func tlsDial(t testing.TB, addr string, cfg *tls.Config) *remoting.Client {
	t.Helper()
	return dial(t, addr, remoting.ClientOptions{TLS: cfg})
}
