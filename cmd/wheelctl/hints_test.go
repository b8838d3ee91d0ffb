package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestHintPlaintextAgainstTLS: wheelctl without --tls against a real node
// whose ports enforce TLS says to add --tls, for an admin command and for
// a send (which used to advise checking the name server).
func TestHintPlaintextAgainstTLS(t *testing.T) {
	n := processtest.Start(t, processtest.Options{ClientTLS: remoting.InsecureTLS(), MutateNode: func(c *process.Config) {
		c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, Namesrv: true}
	}})
	for _, args := range [][]string{
		{"topic", "list", "--namesrv", n.NamesrvAddr()},
		{"send", "--namesrv", n.NamesrvAddr(), "--topic", "t", "--body", "x"},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, "enforces TLS") || !strings.Contains(errOut, "add --tls") ||
			strings.Contains(errOut, "check that --namesrv") {
			t.Errorf("%v: exit %d, stderr %q; want the --tls hint", args, code, errOut)
		}
	}
	if _, errOut, code := runCLI(t, "--tls-insecure", "topic", "list", "--namesrv", n.NamesrvAddr()); code != 0 {
		t.Errorf("with --tls-insecure: exit %d, %s", code, errOut)
	}
}

// TestHintACLRefusals: against a real node with an ACL, each refusal
// names the credentials flags to set, and a send refused by the ACL gets
// no advice about the name server.
func TestHintACLRefusals(t *testing.T) {
	admin := auth.Credentials{AccessKey: "admin-ops", SecretKey: "admin-ops-secret"}
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(`accounts:
  - accessKey: admin-ops
    secretKey: admin-ops-secret
    admin: true
  - accessKey: reader-app
    secretKey: reader-app-secret
    topicPerms: [hinted=SUB]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	n := processtest.Start(t, processtest.Options{Admin: admin, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: time.Second}
	}})
	ns := n.NamesrvAddr()
	t.Setenv(envAccessKey, "")
	t.Setenv(envSecretKey, "")
	mustRun(t, "--access-key", admin.AccessKey, "--secret-key", admin.SecretKey, "topic", "create", "hinted", "--namesrv", ns)
	reader := []string{"--access-key", "reader-app", "--secret-key", "reader-app-secret"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"topic", "list", "--namesrv", ns}, "access control on: give an account with --access-key and --secret-key"},
		{[]string{"send", "--namesrv", ns, "--topic", "hinted", "--body", "x"}, "access control on: give an account with --access-key"},
		{append(append([]string{}, reader...), "topic", "list", "--namesrv", ns), "needs an admin account: give one with --access-key"},
		{[]string{"--access-key", "reader-app", "--secret-key", "wrong-secret-1", "topic", "list", "--namesrv", ns},
			"check --access-key and --secret-key (or WHEELMQ_ACCESS_KEY and WHEELMQ_SECRET_KEY) against its ACL file"},
		{append(append([]string{}, reader...), "send", "--namesrv", ns, "--topic", "hinted", "--body", "x"),
			"lacks the permission named"},
	}
	for _, c := range cases {
		_, errOut, code := runCLI(t, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "check that --namesrv") {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, errOut, c.want)
		}
	}
}

// TestFlagSuggestionsAndEnvAliases: a mistyped flag gets the flag meant;
// WHEELMQ_NAMESRV is read, WHEELCTL_NAMESRV too but with a notice, and
// the WHEELMQ_ one wins.
func TestFlagSuggestionsAndEnvAliases(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"--namsrv", "x", "topic", "list"}}, {[]string{"topic", "list", "--namsrv", "x"}},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errOut, "unknown flag: --namsrv; did you mean --namesrv?") {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errOut)
		}
	}
	if _, errOut, _ := runCLI(t, "send", "--topci", "t"); !strings.Contains(errOut, "did you mean --topic?") {
		t.Errorf("--topci: %q", errOut)
	}
	if _, errOut, _ := runCLI(t, "send", "--zzzzzz"); strings.Contains(errOut, "did you mean") {
		t.Errorf("--zzzzzz: %q", errOut)
	}
	old, cur := closedAddr(t), closedAddr(t)
	t.Setenv("WHEELMQ_NAMESRV", "")
	os.Unsetenv("WHEELMQ_NAMESRV")
	t.Setenv("WHEELCTL_NAMESRV", old)
	_, errOut, code := runCLI(t, "topic", "list")
	if code != 1 || !strings.Contains(errOut, "WHEELCTL_NAMESRV is deprecated: set WHEELMQ_NAMESRV instead") || !strings.Contains(errOut, old) {
		t.Errorf("WHEELCTL_NAMESRV: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("WHEELMQ_NAMESRV", cur)
	_, errOut, _ = runCLI(t, "topic", "list")
	if strings.Contains(errOut, "deprecated") || !strings.Contains(errOut, cur) || strings.Contains(errOut, old) {
		t.Errorf("WHEELMQ_NAMESRV over WHEELCTL_NAMESRV: stderr %q", errOut)
	}
}

// TestConsumeWait: consume's own deadline is --wait; the old --timeout
// still sets it, with a deprecation notice, and is not in the help.
func TestConsumeWait(t *testing.T) {
	out, _, code := runCLI(t, "consume", "--help")
	if code != 0 || !strings.Contains(out, "--wait duration") || strings.Contains(out, "deprecated name of --wait") {
		t.Fatalf("consume --help: exit %d\n%s", code, out)
	}
	_, errOut, code := runCLI(t, "consume", "--topic", "t", "--timeout", "-1s")
	if code != 2 || !strings.Contains(errOut, "--timeout is deprecated here: use --wait") ||
		!strings.Contains(errOut, "--count, --wait and --preview cannot be negative") {
		t.Fatalf("consume --timeout -1s: exit %d, stderr %q", code, errOut)
	}
}

// TestStoreDirIsAFile: store verify and dump given a file say so plainly.
func TestStoreDirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"store", "verify", file}, {"store", "dump", file, "--offset", "0"}} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, file+" is a file, not a directory: give the broker's data directory") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
