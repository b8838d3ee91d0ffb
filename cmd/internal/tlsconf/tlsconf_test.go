package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/storage/vfs"
)

// writePair writes a new self-signed pair for host to cert and key, each
// replaced by a rename as config tools do.
func writePair(t *testing.T, certPath, keyPath, host string, now time.Time) {
	t.Helper()
	dns, ips := sans([]string{host})
	certPEM, keyPEM, err := newSelfSigned(dns, ips, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(nil, keyPath, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(nil, certPath, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
}

func served(t *testing.T, r *Reloader) *x509.Certificate {
	t.Helper()
	cfg, err := r.ServerConfig().GetConfigForClient(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("MinVersion %x, want TLS 1.2", cfg.MinVersion)
	}
	return cfg.Certificates[0].Leaf
}

func TestSelfSignedMadeOnceAndReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	opts := Options{Dir: dir, Hosts: []string{"10.1.2.3", "broker-7", ""}, Logger: zerolog.Nop()}
	r, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	leaf := served(t, r)
	if got := leaf.PublicKeyAlgorithm; got != x509.ECDSA {
		t.Fatalf("key algorithm %v, want ECDSA", got)
	}
	for _, d := range []string{"localhost", "broker-7"} {
		if !slices.Contains(leaf.DNSNames, d) {
			t.Fatalf("DNS SANs %v lack %s", leaf.DNSNames, d)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1", "10.1.2.3"} {
		if !slices.ContainsFunc(leaf.IPAddresses, net.ParseIP(ip).Equal) {
			t.Fatalf("IP SANs %v lack %s", leaf.IPAddresses, ip)
		}
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Fatalf("extended key usage %v, want server and client auth", leaf.ExtKeyUsage)
	}
	st, err := os.Stat(filepath.Join(dir, SelfSignedKey))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v, want 0600", st.Mode().Perm())
	}
	if fp := r.Fingerprint(); fp != Fingerprint(leaf) || len(fp) != 32*3-1 || strings.ToUpper(fp) != fp {
		t.Fatalf("fingerprint %q", fp)
	}

	again, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Fingerprint() != r.Fingerprint() {
		t.Fatal("a second start made a new certificate, want the one in the directory")
	}
}

func TestSelfSignedRenewedWhenExpiringOrBroken(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, SelfSignedCert), filepath.Join(dir, SelfSignedKey)
	writePair(t, certPath, keyPath, "old", time.Now().Add(-selfSignedValidity+24*time.Hour)) // ends tomorrow
	old, err := loadPair(nil, certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fingerprint() == Fingerprint(old.Leaf) {
		t.Fatal("a certificate that expires tomorrow was kept")
	}
	if err := os.WriteFile(certPath, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(Options{Dir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("a broken self-signed certificate stops the start: %v", err)
	}
	if r2.Fingerprint() == r.Fingerprint() {
		t.Fatal("the broken certificate was not made again")
	}
}

func TestOpenRefusesHalfAPair(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, certPath, keyPath, "h", time.Now())
	for name, o := range map[string]Options{
		"cert only":   {CertFile: certPath},
		"key only":    {KeyFile: keyPath},
		"missing":     {CertFile: certPath + ".nope", KeyFile: keyPath},
		"key as cert": {CertFile: keyPath, KeyFile: keyPath},
		"bad CA":      {CertFile: certPath, KeyFile: keyPath, ClientCAFile: keyPath},
	} {
		if _, err := Open(o); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

// TestReloadOnChangeKeepsLastGood replaces the files: a good pair is
// served from the next check on, a broken one keeps the pair in force
// until it is fixed.
func TestReloadOnChangeKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, certPath, keyPath, "first", time.Now())
	r, err := Open(Options{CertFile: certPath, KeyFile: keyPath, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	first := r.Fingerprint()
	if r.Check() {
		t.Fatal("reloaded without a change")
	}
	writePair(t, certPath, keyPath, "second", time.Now())
	if !r.Check() || r.Fingerprint() == first || !slices.Contains(served(t, r).DNSNames, "second") {
		t.Fatal("the new pair is not served")
	}
	second := r.Fingerprint()
	if err := vfs.WriteFileAtomic(nil, certPath, []byte("-----BEGIN CERTIFICATE-----\nbroken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r.Check() || r.Fingerprint() != second || r.Failures() != 1 {
		t.Fatalf("broken file: fingerprint %s (was %s), failures %d", r.Fingerprint(), second, r.Failures())
	}
	if r.Check() || r.Failures() != 1 {
		t.Fatal("an unchanged broken file is tried again")
	}
	writePair(t, certPath, keyPath, "third", time.Now())
	if !r.Check() || !slices.Contains(served(t, r).DNSNames, "third") || r.Reloads() != 2 {
		t.Fatalf("fixed files: reloads %d", r.Reloads())
	}
}

// TestPollerReloadsAndStops runs the poller: a change is served within a
// few polls, and Stop ends it.
func TestPollerReloadsAndStops(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, certPath, keyPath, "first", time.Now())
	r, err := Open(Options{CertFile: certPath, KeyFile: keyPath, Poll: 20 * time.Millisecond, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	r.Start()
	first := r.Fingerprint()
	writePair(t, certPath, keyPath, "second", time.Now())
	deadline := time.Now().Add(5 * time.Second)
	for r.Fingerprint() == first {
		if time.Now().After(deadline) {
			t.Fatal("the poller did not reload the changed files")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Stop()
	r.Stop()
	var never Reloader
	never.stop = make(chan struct{})
	never.Stop() // without Start: returns
}

// TestClientCAAndClientConfig checks the client-CA configuration and what
// the process presents to name servers.
func TestClientCAAndClientConfig(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, certPath, keyPath, "h", time.Now())
	caPath := filepath.Join(dir, "ca.pem")
	writePair(t, caPath, filepath.Join(dir, "ca.key"), "ca", time.Now())
	r, err := Open(Options{CertFile: certPath, KeyFile: keyPath, ClientCAFile: caPath, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := r.ServerConfig().GetConfigForClient(&tls.ClientHelloInfo{})
	if cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.ClientCAs == nil {
		t.Fatalf("client auth %v, want RequireAndVerifyClientCert with a pool", cfg.ClientAuth)
	}
	own := served(t, r)
	if _, err := own.Verify(x509.VerifyOptions{Roots: cfg.ClientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("the process's own certificate is not accepted as a client certificate: %v", err)
	}
	cc := r.ClientConfig()
	got, err := cc.GetClientCertificate(&tls.CertificateRequestInfo{})
	if err != nil || got.Leaf != own || !cc.InsecureSkipVerify || cc.MinVersion != tls.VersionTLS12 {
		t.Fatalf("client config: cert %v err %v", got, err)
	}
	var none *Reloader
	if cc := none.ClientConfig(); cc.GetClientCertificate != nil || !cc.InsecureSkipVerify {
		t.Fatal("without TLS material the client presents a certificate")
	}
}
