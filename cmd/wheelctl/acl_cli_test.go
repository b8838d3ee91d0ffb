package main

// wheelctl user and wheelctl acl against a real broker over TCP; what they
// did is checked in the broker's published directory.

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
)

// runWithStdin runs one command line with stdin as its standard input.
func runWithStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestUserAndACLCommands(t *testing.T) {
	n := startNode(t, processtest.Options{})
	ns := "--namesrv=" + n.NamesrvAddr()
	dir := n.Broker().Pipeline().ACL()
	local := netip.MustParseAddr("127.0.0.1")
	noPassword := func(what, out string) {
		t.Helper()
		for _, pw := range []string{"alice-pw-1", "ops-password-1", "alice-pw-2"} {
			if strings.Contains(out, pw) {
				t.Fatalf("%s shows a password:\n%s", what, out)
			}
		}
	}

	out, errOut, code := runWithStdin(t, "alice-pw-1\n", "user", "create", "--user", "alice", ns)
	if code != 0 || !strings.Contains(out, "created user alice on ") {
		t.Fatalf("create alice: exit %d\n%s%s", code, out, errOut)
	}
	noPassword("create", out+errOut)
	out = mustRun(t, "user", "create", "-u", "ops", "-p", "ops-password-1", "-t", "Super", "--broker", n.BrokerAddr())
	if !strings.Contains(out, "created user ops on "+n.BrokerAddr()) {
		t.Fatalf("create ops: %s", out)
	}
	if a, ok := dir.Lookup("alice"); !ok || a.SecretKey() != "alice-pw-1" || a.IsAdmin() {
		t.Fatal("alice not created as a Normal user with the password from stdin")
	}
	if a, ok := dir.Lookup("ops"); !ok || !a.IsAdmin() {
		t.Fatal("ops not created as a Super user")
	}

	_, errOut, code = runCLI(t, "user", "create", "-u", "alice", "-p", "alice-pw-9", ns)
	if code != 1 || !strings.Contains(errOut, "The user is existed") {
		t.Fatalf("create alice twice: exit %d %s", code, errOut)
	}
	_, errOut, code = runCLI(t, "user", "create", "-u", "bob", "-p", "short", ns)
	if code != 1 || !strings.Contains(errOut, "INVALID_PARAMETER (29): The password is shorter than 8 characters") {
		t.Fatalf("short password: exit %d %s", code, errOut)
	}
	_, errOut, code = runCLI(t, "user", "create", "-u", "bob", ns) // no password on stdin
	if code != 2 || !strings.Contains(errOut, "no password on standard input") {
		t.Fatalf("no password: exit %d %s", code, errOut)
	}
	_, errOut, code = runCLI(t, "user", "update", "-u", "alice", ns)
	if code != 2 || !strings.Contains(errOut, "give --password, --type or --status") {
		t.Fatalf("update of nothing: exit %d %s", code, errOut)
	}

	out = mustRun(t, "user", "list", ns)
	noPassword("list", out)
	if r := rowsOf(out, "alice"); len(r) != 1 || r[0][1] != "Normal" || r[0][2] != "enable" {
		t.Fatalf("list: %s", out)
	}
	if r := rowsOf(out, "ops"); len(r) != 1 || r[0][1] != "Super" {
		t.Fatalf("list: %s", out)
	}
	if r := rowsOf(mustRun(t, "user", "list", "--filter", "op", ns), "alice"); len(r) != 0 {
		t.Fatalf("filtered list shows alice: %v", r)
	}
	out = mustRun(t, "user", "get", "-u", "alice", ns)
	noPassword("get", out)
	if r := rowsOf(out, "alice"); len(r) != 1 {
		t.Fatalf("get: %s", out)
	}
	if _, errOut, code = runCLI(t, "user", "get", "-u", "nobody", ns); code != 1 || !strings.Contains(errOut, "no broker has a user nobody") {
		t.Fatalf("get nobody: exit %d %s", code, errOut)
	}

	// Rules.
	out = mustRun(t, "acl", "create", "-s", "alice", "-r", "Topic:orders*, Group:billing", "-a", "Pub,Sub", "-d", "Allow", "-i", "127.0.0.1", ns)
	if !strings.Contains(out, "created ACL of User:alice on ") {
		t.Fatalf("acl create: %s", out)
	}
	mustRun(t, "acl", "update", "--subject", "User:alice", "--resources", "Topic:orders-secret", "--actions", "Pub", "--decision", "Deny", ns)
	alice, _ := dir.Lookup("alice")
	checks := []struct {
		need auth.Need
		ip   netip.Addr
		ok   bool
	}{
		{auth.Need{Kind: auth.KindTopic, Name: "orders-1", Perm: auth.PermPub}, local, true},
		{auth.Need{Kind: auth.KindTopic, Name: "orders-1", Perm: auth.PermPub}, netip.MustParseAddr("127.0.0.2"), false},
		{auth.Need{Kind: auth.KindTopic, Name: "orders-secret", Perm: auth.PermPub}, local, false},
		{auth.Need{Kind: auth.KindGroup, Name: "billing", Perm: auth.PermSub}, local, true},
	}
	for _, c := range checks {
		if ok, rule := alice.Allows(c.need, c.ip); ok != c.ok {
			t.Errorf("after acl create/update: Allows(%+v, %v) = %v (%s)", c.need, c.ip, ok, rule)
		}
	}
	_, errOut, code = runCLI(t, "acl", "create", "-s", "bob", "-r", "Topic:t", "-a", "Pub", "-d", "Allow", ns)
	if code != 1 || !strings.Contains(errOut, "The subject of User:bob is not exist.") {
		t.Fatalf("acl of bob: exit %d %s", code, errOut)
	}
	_, errOut, code = runCLI(t, "acl", "create", "-s", "alice", "-r", "Topic:t", "-a", "Publish", "-d", "Allow", ns)
	if code != 1 || !strings.Contains(errOut, `The action "Publish" is unknown`) {
		t.Fatalf("bad action: exit %d %s", code, errOut)
	}

	out = mustRun(t, "acl", "get", "-s", "alice", ns)
	if r := rowsOf(out, "User:alice"); len(r) != 3 {
		t.Fatalf("acl get: %s", out)
	}
	if r := rowsOf(out, "User:alice"); r[0][2] != "Topic:orders*" || r[0][3] != "Pub,Sub" || r[0][4] != "127.0.0.1" || r[0][5] != "Allow" {
		t.Fatalf("acl get row %v", r[0])
	}
	if r := rowsOf(mustRun(t, "acl", "list", "--resources", "Group:", ns), "User:alice"); len(r) != 1 || r[0][2] != "Group:billing" {
		t.Fatalf("acl list on groups: %v", r)
	}
	mustRun(t, "acl", "delete", "-s", "alice", "-r", "Group:billing", ns)
	alice, _ = dir.Lookup("alice")
	if ok, _ := alice.Allows(auth.Need{Kind: auth.KindGroup, Name: "billing", Perm: auth.PermSub}, local); ok {
		t.Fatal("deleted rule still grants")
	}
	mustRun(t, "acl", "delete", "-s", "alice", ns)
	if out := mustRun(t, "acl", "get", "-s", "alice", ns); !strings.Contains(out, "User:alice has no ACL") {
		t.Fatalf("acl get after delete: %s", out)
	}
	if out := mustRun(t, "acl", "list", ns); !strings.Contains(out, "(no ACLs)") {
		t.Fatalf("acl list after delete: %s", out)
	}

	// A new password from stdin; then disabled; then gone.
	mustRunIn := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := runWithStdin(t, stdin, args...)
		if code != 0 {
			t.Fatalf("wheelctl %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	noPassword("update", mustRunIn("alice-pw-2\n", "user", "update", "-u", "alice", "--password", "-", ns))
	if a, _ := dir.Lookup("alice"); a.SecretKey() != "alice-pw-2" {
		t.Fatal("password not changed")
	}
	mustRun(t, "user", "update", "-u", "alice", "-s", "disable", ns)
	if _, ok := dir.Lookup("alice"); ok {
		t.Fatal("a disabled user is found")
	}
	mustRun(t, "user", "delete", "-u", "alice", ns)
	if r := rowsOf(mustRun(t, "user", "list", ns), "alice"); len(r) != 0 {
		t.Fatalf("deleted user listed: %v", r)
	}
}

func TestUserAndACLHelp(t *testing.T) {
	for _, group := range []string{"user", "acl"} {
		for _, sub := range []string{"", "create", "update", "delete", "get", "list"} {
			args := []string{group}
			if sub != "" {
				args = append(args, sub)
			}
			out, errOut, code := runCLI(t, append(args, "--help")...)
			if code != 0 || out == "" || errOut != "" {
				t.Errorf("%v --help: exit %d, stderr %q", args, code, errOut)
			}
		}
	}
	for _, args := range [][]string{{"user", "create"}, {"acl", "create", "-s", "alice"}, {"acl", "get"}} {
		if _, errOut, code := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "required flag") {
			t.Errorf("%v: exit %d %q, want a usage error", args, code, errOut)
		}
	}
}
