package process

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/access"
	"github.com/wheelmq/wheelmq/actors/pipeline"
)

// TestHASecret: where the replication secret comes from (a file, else the
// credentials' secret, per secret, never the secret key itself), and the
// configurations refused: an ACL with no secret, and no secret off
// loopback without --ha-insecure.
func TestHASecret(t *testing.T) {
	member := func(listen string, mut func(*Config)) Config {
		c := Config{RunBroker: true, Logger: zerolog.Nop(), Broker: pipeline.Config{Cluster: "c", BrokerName: "b",
			Replication: pipeline.ReplicationController, HAListen: listen}}
		if mut != nil {
			mut(&c)
		}
		return c
	}
	file := filepath.Join(t.TempDir(), "ha.secret")
	if err := os.WriteFile(file, []byte("  group-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short.secret")
	if err := os.WriteFile(short, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	withKey := func(secret string) func(*Config) {
		return func(c *Config) {
			c.Broker.RegisterCredentials = access.Credentials{AccessKey: "broker-ak", SecretKey: secret}
		}
	}

	s, mode, err := haSecret(member("0.0.0.0:10912", func(c *Config) { c.HASecretFile = file; c.ACL.File = "acl.yml" }))
	if err != nil || mode != haSecretFile || string(s) != "group-secret-0123456789" {
		t.Fatalf("from a file: %q %s %v", s, mode, err)
	}
	if _, _, err := haSecret(member("0.0.0.0:10912", func(c *Config) { c.HASecretFile = short })); err == nil ||
		!strings.Contains(err.Error(), "at least") {
		t.Fatalf("a short secret file: %v", err)
	}
	s1, mode, err := haSecret(member("0.0.0.0:10912", withKey("secret-1")))
	if err != nil || mode != haSecretCredentials || len(s1) != 32 || bytes.Contains(s1, []byte("secret-1")) {
		t.Fatalf("from credentials: %x %s %v", s1, mode, err)
	}
	s2, _, _ := haSecret(member("0.0.0.0:10912", withKey("secret-2")))
	again, _, _ := haSecret(member("0.0.0.0:10912", withKey("secret-1")))
	if bytes.Equal(s1, s2) || !bytes.Equal(s1, again) {
		t.Fatal("the derived secret does not depend on exactly the credentials' secret")
	}

	if _, _, err := haSecret(member("127.0.0.1:10912", func(c *Config) { c.ACL.File = "acl.yml" })); err == nil ||
		!strings.Contains(err.Error(), "--ha-secret-file") {
		t.Fatalf("an ACL with no secret started: %v", err)
	}
	if _, _, err := haSecret(member("0.0.0.0:10912", nil)); err == nil || !strings.Contains(err.Error(), "--ha-insecure") {
		t.Fatalf("no secret off loopback started: %v", err)
	}
	if s, mode, err := haSecret(member("0.0.0.0:10912", func(c *Config) { c.HAInsecure = true })); err != nil || s != nil || mode != haSecretInsecure {
		t.Fatalf("--ha-insecure: %q %s %v", s, mode, err)
	}
	if s, mode, err := haSecret(member("127.0.0.1:0", nil)); err != nil || s != nil || mode != haSecretLoopback {
		t.Fatalf("loopback: %q %s %v", s, mode, err)
	}
	if s, mode, err := haSecret(Config{RunBroker: true}); err != nil || s != nil || mode != "" {
		t.Fatalf("standalone: %q %s %v", s, mode, err)
	}

	// Start refuses the ACL case before it opens anything.
	cfg := member("127.0.0.1:0", func(c *Config) { c.ACL.File = "acl.yml"; c.Broker.DataDir = t.TempDir() })
	if n, err := Start(cfg); err == nil || !strings.Contains(err.Error(), "--acl-file needs a replication secret") {
		if n != nil {
			_ = n.Stop(t.Context())
		}
		t.Fatalf("Start with an ACL and no replication secret: %v", err)
	}
}
