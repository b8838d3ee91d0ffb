package aclfile

import (
	"os"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/access"
)

const (
	adminAcct = "  - accessKey: broker-inner\n    secretKey: broker-inner-secret\n    admin: true\n"
	aliceAcct = "  - accessKey: alice-app\n    secretKey: secret-alice-app\n"
)

// Reloads that would lock the cluster out are refused, each with its
// reason, and the version in force stays: an empty file, a truncated
// one, one without the process's own account or without any admin.
func TestReloadLockoutRefused(t *testing.T) {
	good := file(adminAcct, aliceAcct)
	keep := []access.Credentials{{AccessKey: "broker-inner", SecretKey: "broker-inner-secret"}}
	r := startWatcherKeep(t, good, keep)
	for _, c := range []struct{ name, content, want string }{
		{"empty", "", "no accounts"},
		{"accounts only", "accounts:\n", "no accounts"},
		{"truncated before admin", good[:len("accounts:\n")+len(adminAcct)-12], "no admin account"},
		{"truncated in an account", good[:len("accounts:\n")+30], "secretKey"},
		{"truncated in a secret", good[:strings.Index(good, "secret\n")], "signs its own requests"},
		{"own account dropped", file(aliceAcct, "  - accessKey: other-admin\n    secretKey: other-admin-secret\n    admin: true\n"), "drops account broker-inner"},
		{"no admin left", file(aliceAcct, "  - accessKey: broker-inner\n    secretKey: broker-inner-secret\n"), "no admin account"},
	} {
		replace(t, r.path, c.content)
		line := r.waitLog("not reloaded")
		if !strings.Contains(line, c.want) {
			t.Fatalf("%s: log line %s, want %q", c.name, line, c.want)
		}
		if s := r.view.Load(); s.Version != 1 || s.ACL.Len() != 2 {
			t.Fatalf("%s: the version in force changed: %d, %d accounts", c.name, s.Version, s.ACL.Len())
		}
		if a, ok := r.view.Load().ACL.Lookup("broker-inner"); !ok || a.SecretKey() != "broker-inner-secret" {
			t.Fatalf("%s: own account lost", c.name)
		}
	}
	if gauge(r.m.stale) != 1 {
		t.Fatal("not stale")
	}
	// Said explicitly, no accounts is a version like any other.
	replace(t, r.path, "noAccounts: true\n")
	if s := r.waitVersion(2); s.ACL.Len() != 0 {
		t.Fatalf("explicit noAccounts: %d accounts", s.ACL.Len())
	}
}

// An empty file at start does not start the process.
func TestLoadEmptyRefused(t *testing.T) {
	path := t.TempDir() + "/plain_acl.yml"
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "noAccounts: true") {
		t.Fatalf("empty file: %v", err)
	}
}
