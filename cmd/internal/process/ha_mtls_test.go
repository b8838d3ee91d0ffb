package process_test

import (
	"crypto/tls"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/cmd/internal/tlsconf"
	"github.com/wheelmq/wheelmq/netloop"
)

// TestReplicaVerifiesMasterCertificate: with the operator's certificate
// and a CA bundle, a replica's TLS towards its master takes only a
// certificate of those CAs valid for the host it dialed; and a group on
// such certificates replicates.
func TestReplicaVerifiesMasterCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, other := newTestCA(t), newTestCA(t)
	caPath := filepath.Join(dir, "ca.pem")
	writePEM(t, caPath, "CERTIFICATE", ca.cert.Raw)
	certPath, keyPath := filepath.Join(dir, "b.crt"), filepath.Join(dir, "b.key")
	writePair(t, certPath, keyPath, ca.issue(t, "broker"))
	r, err := tlsconf.Open(tlsconf.Options{CertFile: certPath, KeyFile: keyPath, ClientCAFile: caPath, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(cert tls.Certificate) string {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_ = c.(*tls.Conn).Handshake()
				_ = c.Close()
			}
		}()
		return ln.Addr().String()
	}
	verify := process.HAVerifyMaster(r, process.TLSConfig{CertFile: certPath, ClientCAFile: caPath})
	if verify == nil || process.HAVerifyMaster(r, process.TLSConfig{}) != nil {
		t.Fatal("verification on without a CA bundle, or off with one")
	}
	dial := func(addr, as string) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, r.ClientConfig())
		if err != nil {
			return err
		}
		defer c.Close()
		return verify(c.ConnectionState(), as)
	}
	good, fake := serve(ca.issue(t, "master")), serve(other.issue(t, "fake-master"))
	if err := dial(good, good); err != nil {
		t.Fatalf("the group's master refused: %v", err)
	}
	if err := dial(fake, fake); err == nil || !strings.Contains(err.Error(), "master's certificate") {
		t.Fatalf("a master of another CA taken: %v", err)
	}
	_, port, _ := net.SplitHostPort(good)
	if err := dial(good, net.JoinHostPort("10.9.9.9", port)); err == nil {
		t.Fatal("a certificate not valid for the dialed host taken")
	}

	// A group on those certificates, with the secret, replicates.
	ns := startControllers(t)
	secret := haSecretFile(t)
	member := func(i string) *process.Node {
		cp, kp := filepath.Join(dir, i+".crt"), filepath.Join(dir, i+".key")
		writePair(t, cp, kp, ca.issue(t, "broker-"+i))
		return processtest.Start(t, processtest.Options{Metrics: true, ClientTLS: insecureWithCert(t, ca), Mutate: func(c *pipeline.Config) {
			c.BrokerName = "broker-a"
			c.Replication, c.HAListen, c.MinInSyncReplicas = pipeline.ReplicationController, "127.0.0.1:0", 1
		}, MutateNode: func(c *process.Config) {
			c.NamesrvListen, c.NamesrvDir = "", ""
			c.Broker.NameServers = ns
			c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, CertFile: cp, KeyFile: kp, ClientCAFile: caPath}
			c.HASecretFile = secret
		}})
	}
	a := member("a")
	// The HTTP port serves HTTPS with client certificates under enforcing:
	// the roles are read in process.
	haWait(t, "first member master", func() bool {
		st := a.Broker().Pipeline().HA().Role
		return st.Kind == role.Master && !st.Fenced
	})
	b := member("b")
	haWait(t, "second member in the sync-state set", func() bool {
		return slices.Equal(a.Broker().Pipeline().HA().Role.SyncStateSet, []int64{1, 2})
	})
	haWait(t, "the replica holds the master's log", func() bool {
		m := a.Broker().Store().CommitLog.MaxOffset()
		return m > 0 && b.Broker().Store().CommitLog.MaxOffset() == m
	})
}

// insecureWithCert is a test client's TLS: it presents a certificate of
// ca (the ports require one) and does not verify the server.
func insecureWithCert(t *testing.T, ca *testCA) *tls.Config {
	cfg := insecure()
	cfg.Certificates = []tls.Certificate{ca.issue(t, "client")}
	return cfg
}
