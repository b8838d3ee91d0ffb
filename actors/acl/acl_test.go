package acl

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/stage"
	"github.com/wheelmq/wheelmq/actors/supervisor"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/storage/adminbody"
	"github.com/wheelmq/wheelmq/storage/vfs"
	"github.com/wheelmq/wheelmq/storage/vfs/crashfs"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

const wait = 5 * time.Second

type rig struct {
	fs   vfs.FS
	dir  string
	sys  *actor.ActorSystem
	reg  *stage.Registry
	view View
	s    *stage.Stage
}

func newRig(t *testing.T, fs vfs.FS, dir string) *rig {
	t.Helper()
	r := &rig{fs: fs, dir: dir, sys: stage.NewSystem(zerolog.Nop()), reg: stage.NewRegistry(prometheus.NewRegistry())}
	r.start(t)
	t.Cleanup(func() {
		if r.s != nil {
			r.s.Stop()
		}
		r.sys.Shutdown()
	})
	return r
}

func (r *rig) start(t *testing.T) {
	t.Helper()
	r.view.p.Store(nil)
	s, err := r.reg.Spawn(r.sys, supervisor.New(supervisor.Policy{}), StageName,
		Producer(Options{FS: r.fs, Dir: r.dir, View: &r.view, Logger: zerolog.Nop()}))
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	deadline := time.Now().Add(wait)
	for r.view.p.Load() == nil { // published in Started
		if time.Now().After(deadline) {
			t.Fatal("stage published no snapshot")
		}
		time.Sleep(time.Millisecond)
	}
}

// restart stops the stage and starts a new one on the same files.
func (r *rig) restart(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.s.StopWithin(ctx); err != nil {
		t.Fatalf("stage did not stop: %v", err)
	}
	r.start(t)
}

// call sends a message built around a done callback and waits for it.
func (r *rig) call(t *testing.T, msg func(done func(error)) any) error {
	t.Helper()
	ch := make(chan error, 1)
	r.s.Send(msg(func(err error) { ch <- err }))
	select {
	case err := <-ch:
		return err
	case <-time.After(wait):
		t.Fatal("request not answered")
		return nil
	}
}

func (r *rig) createUser(t *testing.T, name, pw, typ string) error {
	t.Helper()
	u, err := NewUser(name, adminbody.UserInfo{Password: pw, UserType: typ})
	if err != nil {
		t.Fatal(err)
	}
	return r.call(t, func(done func(error)) any { return &CreateUser{User: u, Done: done} })
}

func (r *rig) putACL(t *testing.T, subject string, entries ...adminbody.PolicyEntryInfo) error {
	t.Helper()
	a, err := ParseACL(subject, adminbody.AclInfo{Policies: []adminbody.PolicyInfo{{Entries: entries}}})
	if err != nil {
		t.Fatal(err)
	}
	return r.call(t, func(done func(error)) any { return &PutACL{ACL: a, Done: done} })
}

func wantRefused(t *testing.T, what string, err error, remark string) {
	t.Helper()
	if got, ok := IsRefused(err); !ok || got != remark {
		t.Fatalf("%s: %v, want Refused %q", what, err, remark)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestStageUsersAndACLs(t *testing.T) {
	r := newRig(t, nil, filepath.Join(t.TempDir(), "acl"))
	must(t, "create", r.createUser(t, "alice", "alice-pw-1", ""))
	wantRefused(t, "create twice", r.createUser(t, "alice", "other-pw-2", ""), "The user is existed")
	if u, ok := r.view.Load().User("alice"); !ok || u.Password != "alice-pw-1" || u.Type != TypeNormal {
		t.Fatalf("alice %+v %v", u, ok)
	}

	wantRefused(t, "update missing", r.call(t, func(done func(error)) any {
		return &UpdateUser{Change: Change{Name: "bob", Status: StatusDisable}, Done: done}
	}), "The user is not exist")
	must(t, "update", r.call(t, func(done func(error)) any {
		return &UpdateUser{Change: Change{Name: "alice", Password: "alice-pw-2"}, Done: done}
	}))
	acct, ok := r.view.Lookup("alice")
	if !ok || acct.SecretKey() != "alice-pw-2" {
		t.Fatalf("password not changed: %v", ok)
	}

	wantRefused(t, "acl of missing user", r.putACL(t, "User:bob", e("Topic:t", "Pub", "Allow")), "The subject of User:bob is not exist.")
	must(t, "acl", r.putACL(t, "User:alice", e("Topic:t", "Pub", "Allow")))
	must(t, "acl merge", r.putACL(t, "User:alice", e("Group:g", "Sub", "Allow"), e("Topic:t", "Pub,Sub", "Allow")))
	a, _ := r.view.Load().ACL("alice")
	if a.entries() != 2 || a.Policies[0].Entries[0].Actions != ActPub|ActSub {
		t.Fatalf("merged ACL %+v", a.Info())
	}
	acct, _ = r.view.Lookup("alice")
	if ok, rule := acct.Allows(topic("t", auth.PermSub), inside); !ok {
		t.Fatalf("the ACL does not grant Sub on t: %s", rule)
	}

	res, _ := ParseResource("Group:g")
	must(t, "delete entry", r.call(t, func(done func(error)) any {
		return &DeleteACL{User: "alice", PolicyType: PolicyCustom, Resource: &res, Done: done}
	}))
	if a, _ := r.view.Load().ACL("alice"); a.entries() != 1 {
		t.Fatalf("entry not deleted %+v", a.Info())
	}
	must(t, "delete missing entry", r.call(t, func(done func(error)) any {
		return &DeleteACL{User: "alice", PolicyType: PolicyDefault, Resource: &res, Done: done}
	}))
	must(t, "delete acl", r.call(t, func(done func(error)) any { return &DeleteACL{User: "alice", Done: done} }))
	if _, ok := r.view.Load().ACL("alice"); ok {
		t.Fatal("ACL not deleted")
	}
	wantRefused(t, "delete missing acl", r.call(t, func(done func(error)) any { return &DeleteACL{User: "alice", Done: done} }),
		"The acl is not exist.")
	wantRefused(t, "delete acl of missing user", r.call(t, func(done func(error)) any { return &DeleteACL{User: "bob", Done: done} }),
		"The subject is not exist.")

	must(t, "acl again", r.putACL(t, "User:alice", e("*", "All", "Allow")))
	must(t, "delete user", r.call(t, func(done func(error)) any { return &DeleteUser{Name: "alice", Done: done} }))
	if _, ok := r.view.Load().ACL("alice"); ok {
		t.Fatal("the user's ACL outlived it")
	}
	if _, ok := r.view.Lookup("alice"); ok {
		t.Fatal("deleted user found")
	}
	must(t, "delete missing user", r.call(t, func(done func(error)) any { return &DeleteUser{Name: "alice", Done: done} }))
	// A new user of the same name starts with no rights.
	must(t, "recreate", r.createUser(t, "alice", "alice-pw-3", ""))
	acct, _ = r.view.Lookup("alice")
	if ok, _ := acct.Allows(topic("t", auth.PermPub), inside); ok {
		t.Fatal("a recreated user inherited the old ACL")
	}
}

func TestStagePersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "acl")
	r := newRig(t, nil, dir)
	must(t, "alice", r.createUser(t, "alice", "alice-pw-1", ""))
	must(t, "root", r.createUser(t, "root", "root-pw-12", "Super"))
	must(t, "acl", r.putACL(t, "User:alice", e("Topic:ord*", "Pub", "Allow", "10.0.0.0/8"), e("Topic:orders-secret", "Pub", "Deny")))
	before := r.view.Load()

	for _, name := range []string{UsersFile, ACLsFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", name, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v %v; want 0700", fi.Mode(), err)
	}
	// The layout docs/formats.md gives.
	raw, _ := os.ReadFile(filepath.Join(dir, UsersFile))
	var uf map[string]any
	if err := json.Unmarshal(raw, &uf); err != nil || uf["format"] != 1.0 || len(uf["users"].([]any)) != 2 {
		t.Fatalf("users.json: %s", raw)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, ACLsFile))
	if want := `"resource": "Topic:ord*",
              "actions": [
                "Pub"
              ],
              "sourceIps": [
                "10.0.0.0/8"
              ],
              "decision": "Allow"`; !strings.Contains(string(raw), want) {
		t.Fatalf("acls.json:\n%s", raw)
	}

	r.restart(t)
	after := r.view.Load()
	for _, name := range []string{"alice", "root"} {
		b, _ := before.User(name)
		a, ok := after.User(name)
		if !ok || a != b {
			t.Fatalf("%s after restart %+v, before %+v", name, a, b)
		}
	}
	a, _ := after.ACL("alice")
	b, _ := before.ACL("alice")
	if got, want := mustJSON(t, a.Info()), mustJSON(t, b.Info()); got != want {
		t.Fatalf("ACL after restart %s, before %s", got, want)
	}
	snap, err := Load(nil, dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := snap.Lookup("alice")
	if ok, _ := alice.Allows(topic("orders", auth.PermPub), inside); !ok {
		t.Fatal("loaded ACL does not grant what it says")
	}
	if ok, _ := alice.Allows(topic("orders-secret", auth.PermPub), inside); ok {
		t.Fatal("loaded ACL lost its deny")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoadDamaged(t *testing.T) {
	good := `{"format":1,"users":[{"username":"alice","password":"alice-pw-1","userType":"Normal","userStatus":"enable"}]}`
	tests := []struct {
		name, users, acls, want string
	}{
		{"missing files", "", "", ""},
		{"good", good, `{"format":1,"acls":[{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[{"resource":"*","actions":["Sub"],"decision":"Allow"}]}]}]}`, ""},
		{"orphan acl ignored", good, `{"format":1,"acls":[{"subject":"User:bob","policies":[{"policyType":"Custom","entries":[{"resource":"*","actions":["Sub"],"decision":"Allow"}]}]}]}`, ""},
		{"truncated", good[:40], "", "users.json is damaged"},
		{"garbage", "\x00\x00\x00", "", "users.json is damaged"},
		{"trailing", good + "{}", "", "data after the JSON object"},
		{"unknown field", `{"format":1,"users":[],"admins":[]}`, "", `unknown field "admins"`},
		{"format", `{"format":2,"users":[]}`, "", "format 2"},
		{"no format", `{"users":[]}`, "", "format 0"},
		{"short password", `{"format":1,"users":[{"username":"alice","password":"short","userType":"Normal","userStatus":"enable"}]}`, "",
			"user 1: The password is shorter than 8"},
		{"bad type", `{"format":1,"users":[{"username":"alice","password":"alice-pw-1","userType":"Root","userStatus":"enable"}]}`, "", `userType "Root"`},
		{"twice", `{"format":1,"users":[{"username":"a","password":"alice-pw-1"},{"username":"a","password":"alice-pw-1"}]}`, "", `user "a" twice`},
		{"bad resource", good, `{"format":1,"acls":[{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:a b","actions":["Sub"],"decision":"Allow"}]}]}]}`,
			"acls.json: acl 1: The resource"},
		{"empty policy", good, `{"format":1,"acls":[{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[]}]}]}`, "policy 1 has no policyType or no entries"},
		{"damaged acls", good, `{"format":1,"acls":[`, "acls.json is damaged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range map[string]string{UsersFile: tt.users, ACLsFile: tt.acls} {
				if body != "" {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			snap, err := Load(nil, dir, zerolog.Nop())
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := snap.ACL("bob"); ok {
					t.Fatal("an ACL without its user was kept")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %v, want one naming %s with %q", err, dir, tt.want)
			}
			if strings.Contains(err.Error(), "alice-pw-1") {
				t.Fatalf("error %v shows a password", err)
			}
		})
	}
}

// TestStageFullDisk: a change whose write fails is answered with the error
// and changes nothing, in memory or on disk; the next one goes through.
func TestStageFullDisk(t *testing.T) {
	fs := &vfstest.FaultFS{}
	dir := filepath.Join(t.TempDir(), "acl")
	r := newRig(t, fs, dir)
	must(t, "alice", r.createUser(t, "alice", "alice-pw-1", ""))
	must(t, "acl", r.putACL(t, "User:alice", e("Topic:t", "Pub", "Allow")))
	users, _ := os.ReadFile(filepath.Join(dir, UsersFile))
	acls, _ := os.ReadFile(filepath.Join(dir, ACLsFile))

	fs.Full(true)
	if err := r.createUser(t, "bob", "bob-pw-123", ""); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("create on a full disk: %v", err)
	}
	if err := r.putACL(t, "User:alice", e("*", "All", "Allow")); err == nil {
		t.Fatal("acl change on a full disk succeeded")
	}
	if err := r.call(t, func(done func(error)) any { return &DeleteUser{Name: "alice", Done: done} }); err == nil {
		t.Fatal("delete on a full disk succeeded")
	}
	if _, ok := r.view.Lookup("bob"); ok {
		t.Fatal("a user whose write failed is published")
	}
	if a, _ := r.view.Load().ACL("alice"); a.entries() != 1 {
		t.Fatal("an ACL change whose write failed is published")
	}
	if _, ok := r.view.Lookup("alice"); !ok {
		t.Fatal("a deletion whose write failed is published")
	}
	if u, _ := os.ReadFile(filepath.Join(dir, UsersFile)); string(u) != string(users) {
		t.Fatal("users.json changed by a failed write")
	}
	if a, _ := os.ReadFile(filepath.Join(dir, ACLsFile)); string(a) != string(acls) {
		t.Fatal("acls.json changed by a failed write")
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 2 {
		t.Fatalf("temporary files left: %v", left)
	}

	// The deletion's second write (users.json) fails after its first
	// (acls.json): the user stays, without its ACL, on disk as in memory.
	fs.Full(false)
	fs.FailWrite(2)
	if err := r.call(t, func(done func(error)) any { return &DeleteUser{Name: "alice", Done: done} }); err == nil {
		t.Fatal("half-failed delete answered success")
	}
	if _, ok := r.view.Lookup("alice"); !ok {
		t.Fatal("user gone although its file was not written")
	}
	if _, ok := r.view.Load().ACL("alice"); ok {
		t.Fatal("ACL kept in memory although its file was written without it")
	}
	snap, err := Load(nil, dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Lookup("alice"); !ok {
		t.Fatal("disk lost the user")
	}
	if _, ok := snap.ACL("alice"); ok {
		t.Fatal("disk kept the ACL")
	}
	must(t, "delete again", r.call(t, func(done func(error)) any { return &DeleteUser{Name: "alice", Done: done} }))
	must(t, "bob", r.createUser(t, "bob", "bob-pw-123", ""))
}

// TestStageCrash: every change answered is in what a power cut leaves.
func TestStageCrash(t *testing.T) {
	fs := crashfs.New()
	dir := "/data/acl"
	r := newRig(t, fs, dir)
	steps := []struct {
		name string
		do   func() error
		ok   func(s *Snapshot) bool
	}{
		{"create", func() error { return r.createUser(t, "alice", "alice-pw-1", "") },
			func(s *Snapshot) bool { _, ok := s.User("alice"); return ok }},
		{"acl", func() error { return r.putACL(t, "User:alice", e("Topic:t", "Pub", "Allow")) },
			func(s *Snapshot) bool { _, ok := s.ACL("alice"); return ok }},
		{"password", func() error {
			return r.call(t, func(done func(error)) any {
				return &UpdateUser{Change: Change{Name: "alice", Password: "alice-pw-2"}, Done: done}
			})
		}, func(s *Snapshot) bool { u, _ := s.User("alice"); return u.Password == "alice-pw-2" }},
		{"delete", func() error {
			return r.call(t, func(done func(error)) any { return &DeleteUser{Name: "alice", Done: done} })
		}, func(s *Snapshot) bool { _, u := s.User("alice"); _, a := s.ACL("alice"); return !u && !a }},
	}
	for _, st := range steps {
		must(t, st.name, st.do())
		snap, err := Load(fs.Crash(), dir, zerolog.Nop())
		if err != nil {
			t.Fatalf("after %s and a crash: %v", st.name, err)
		}
		if !st.ok(snap) {
			t.Fatalf("the crash lost %s", st.name)
		}
	}
}
