package process

// The replication stream's secret (docs/operations.md, "Replicated broker
// groups", threat model): every HA connection opens with both ends
// proving it (actors/replication, auth.go), so it must be a secret every
// broker of the group holds and nobody else does.

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/tlsconf"
	"github.com/wheelmq/wheelmq/netloop"
)

// haSecretLabel separates the HA secret derived from the ACL credentials
// from the credentials' own use (signing requests).
const haSecretLabel = "wheelmq-ha-secret-v2"

// Replication security modes, as haSecret reports them.
const (
	haSecretFile        = "secret-file"
	haSecretCredentials = "credentials"
	haSecretLoopback    = "loopback"
	haSecretInsecure    = "insecure"
)

// haSecret is the group's HA secret of a broker in controller mode (nil
// otherwise) and where it comes from:
//
//   - HASecretFile: its content (at least MinHASecretLen bytes);
//   - else the broker's credentials (--access-key/--secret-key, the same
//     on every broker of a group under access control):
//     HMAC-SHA256(secretKey, "wheelmq-ha-secret-v2");
//   - else none, which is refused with an ACL (access control that hands
//     the CommitLog to anyone on the HA port is none), and off loopback
//     unless HAInsecure says so.
func haSecret(cfg Config) ([]byte, string, error) {
	b := cfg.Broker
	if !cfg.RunBroker || b.Replication != pipeline.ReplicationController {
		return nil, "", nil
	}
	if cfg.HASecretFile != "" {
		s, err := readSecret("replication secret file", cfg.HASecretFile, MinHASecretLen, cfg.Logger)
		if err != nil {
			return nil, "", err
		}
		return s, haSecretFile, nil
	}
	if !b.RegisterCredentials.IsZero() {
		m := hmac.New(sha256.New, []byte(b.RegisterCredentials.SecretKey))
		m.Write([]byte(haSecretLabel))
		return m.Sum(nil), haSecretCredentials, nil
	}
	if cfg.ACL.File != "" {
		return nil, "", fmt.Errorf("replication: --replication controller with --acl-file needs a replication secret: " +
			"give --ha-secret-file (the same file on every broker of the group), or --access-key/--secret-key " +
			"(the same on every broker of the group); without one the HA port would stream the CommitLog to anyone")
	}
	if b.HAListen == "" || netloop.LoopbackListen(b.HAListen) {
		return nil, haSecretLoopback, nil
	}
	if cfg.HAInsecure {
		return nil, haSecretInsecure, nil
	}
	return nil, "", fmt.Errorf("replication: the HA port %s is not on a loopback address and there is no replication secret: "+
		"anyone reaching it could read the CommitLog, and a fake master could feed the replicas; give --ha-secret-file "+
		"(or --access-key/--secret-key), or --ha-insecure", b.HAListen)
}

// MinHASecretLen is the shortest replication secret file content taken.
const MinHASecretLen = 16

// haVerifyMaster is a replica's check of its master's TLS certificate
// when the process has the operator's certificate and a CA bundle
// (--tls-cert and --tls-client-ca, as the controllers' mutual TLS takes
// them): it must chain to those CAs and be valid for the host of addr,
// the HA address the controller named. nil otherwise: the master is then
// authenticated by the secret's proof alone, bound to the TLS connection.
func haVerifyMaster(r *tlsconf.Reloader, cfg TLSConfig) func(cs tls.ConnectionState, addr string) error {
	if r == nil || cfg.ClientCAFile == "" || cfg.CertFile == "" {
		return nil
	}
	return func(cs tls.ConnectionState, addr string) error {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("replication tls: master address %q: %w", addr, err)
		}
		return verifyMaster(cs.PeerCertificates, r.ClientCAs(), host)
	}
}

// verifyMaster checks a master's certificate chain against cas and host
// (a DNS name or an IP address).
func verifyMaster(chain []*x509.Certificate, cas *x509.CertPool, host string) error {
	if len(chain) == 0 {
		return errors.New("replication tls: the master presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: cas, Intermediates: inter, DNSName: host,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := chain[0].Verify(opts); err != nil {
		return fmt.Errorf("replication tls: the master's certificate (for %s): %w", host, err)
	}
	return nil
}
