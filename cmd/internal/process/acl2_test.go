package process_test

// Issue 18 item 4: RocketMQ 5.3's ACL 2.0 admin requests (3001-3010) with
// the Java client's own frames, the answers (never a password), the
// published auth.Directory, and persistence across a restart.

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// javaRoundTrip sends a golden JSON header frame (testdata/java/<name>.json)
// and reads the answer.
func javaRoundTrip(t *testing.T, addr, name string) *remoting.Command {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(javaFrame(t, name, "", "")); err != nil {
		t.Fatal(err)
	}
	resp, err := remoting.ReadFrame(conn, remoting.DefaultMaxFrame)
	if err != nil {
		t.Fatalf("%s: read the answer: %v", name, err)
	}
	return resp
}

func wantCode(t *testing.T, what string, resp *remoting.Command, code int32, remark string) {
	t.Helper()
	if resp.Code != code || !strings.Contains(resp.Remark, remark) {
		t.Fatalf("%s: code %d %q, want %d with %q", what, resp.Code, resp.Remark, code, remark)
	}
}

var (
	loopback = netip.MustParseAddr("127.0.0.1")
	faraway  = netip.MustParseAddr("10.9.8.7")
)

func TestACL2UsersAndPolicies(t *testing.T) {
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir})
	addr := n.BrokerAddr()

	// mqadmin createUser and createAcl, byte for byte.
	mustOK(t, "create user", rawInvoke(t, addr, goldenFrame(t, "java_auth_create_user")))
	wantCode(t, "create user twice", rawInvoke(t, addr, goldenFrame(t, "java_auth_create_user")),
		remoting.NoPermission, "The user is existed")
	mustOK(t, "create acl", rawInvoke(t, addr, goldenFrame(t, "java_auth_create_acl")))

	// Listed and read back without the password.
	resp := mustOK(t, "list users", javaRoundTrip(t, addr, "auth_list_user_3005"))
	if strings.Contains(string(resp.Body), "alice-pw-1") || strings.Contains(string(resp.Body), "password") {
		t.Fatalf("3005 answer shows the password: %s", resp.Body)
	}
	if string(resp.Body) != `[{"userStatus":"enable","userType":"Normal","username":"alice"}]` {
		t.Fatalf("3005 body %s", resp.Body)
	}
	resp = mustOK(t, "get user", call(t, addr, remoting.AuthGetUser, map[string]string{"username": "alice"}, nil))
	if u, err := adminbody.DecodeUserInfo(resp.Body); err != nil || u != (adminbody.UserInfo{Username: "alice", UserType: "Normal", UserStatus: "enable"}) {
		t.Fatalf("3004 body %s (%v)", resp.Body, err)
	}
	resp = mustOK(t, "get missing user", call(t, addr, remoting.AuthGetUser, map[string]string{"username": "nobody"}, nil))
	if len(resp.Body) != 0 {
		t.Fatalf("3004 of a missing user answered %s", resp.Body)
	}
	const aclBody = `{"policies":[{"entries":[` +
		`{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:orders*","sourceIps":["127.0.0.0/8"]},` +
		`{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:billing","sourceIps":["127.0.0.0/8"]}],` +
		`"policyType":"Custom"}],"subject":"User:alice"}`
	resp = mustOK(t, "get acl", javaRoundTrip(t, addr, "auth_get_acl_3009"))
	if string(resp.Body) != aclBody {
		t.Fatalf("3009 body\n%s\nwant\n%s", resp.Body, aclBody)
	}
	resp = mustOK(t, "list acls", javaRoundTrip(t, addr, "auth_list_acl_3010"))
	if string(resp.Body) != "["+aclBody+"]" {
		t.Fatalf("3010 body %s", resp.Body)
	}
	resp = mustOK(t, "list acls filtered", call(t, addr, remoting.AuthListACL, map[string]string{"resourceFilter": "Group:"}, nil))
	if acls, err := adminbody.DecodeAclInfos(resp.Body); err != nil || len(acls) != 1 || len(acls[0].Policies[0].Entries) != 1 {
		t.Fatalf("3010 filtered %s (%v)", resp.Body, err)
	}

	// The published Directory grants what the ACL says, and nothing else.
	dirOf := n.Broker().Pipeline().ACL()
	alice, ok := dirOf.Lookup("alice")
	if !ok || alice.SecretKey() != "alice-pw-1" || alice.IsAdmin() {
		t.Fatalf("alice in the directory: %v", ok)
	}
	grants := []struct {
		need auth.Need
		ip   netip.Addr
		ok   bool
	}{
		{auth.Need{Kind: auth.KindTopic, Name: "orders-eu", Perm: auth.PermPub}, loopback, true},
		{auth.Need{Kind: auth.KindTopic, Name: "orders-eu", Perm: auth.PermSub}, loopback, true},
		{auth.Need{Kind: auth.KindTopic, Name: "orders-eu", Perm: auth.PermPub}, faraway, false},
		{auth.Need{Kind: auth.KindTopic, Name: "payments", Perm: auth.PermPub}, loopback, false},
		{auth.Need{Kind: auth.KindGroup, Name: "billing", Perm: auth.PermSub}, loopback, true},
		{auth.Need{Kind: auth.KindGroup, Name: "billing2", Perm: auth.PermSub}, loopback, false},
	}
	for _, g := range grants {
		if ok, rule := alice.Allows(g.need, g.ip); ok != g.ok {
			t.Errorf("Allows(%+v, %v) = %v (%s), want %v", g.need, g.ip, ok, rule, g.ok)
		}
	}

	// mqadmin updateAcl with a Deny: it wins over the prefix's Allow.
	deny, _ := adminbody.EncodeAuth(adminbody.AclInfo{Subject: "User:alice", Policies: []adminbody.PolicyInfo{{Entries: []adminbody.PolicyEntryInfo{
		{Actions: []string{"Pub"}, Decision: "Deny", Resource: "Topic:orders-secret"}}}}})
	mustOK(t, "update acl", call(t, addr, remoting.AuthUpdateACL, map[string]string{"subject": "User:alice"}, deny))
	alice, _ = dirOf.Lookup("alice")
	if ok, rule := alice.Allows(auth.Need{Kind: auth.KindTopic, Name: "orders-secret", Perm: auth.PermPub}, loopback); ok ||
		!strings.Contains(rule, "Topic:orders-secret Pub Deny") {
		t.Fatalf("the Deny did not win: %v %s", ok, rule)
	}

	// Bad input: clear codes and remarks, nothing changed.
	short, _ := adminbody.EncodeAuth(adminbody.UserInfo{Username: "bob", Password: "short"})
	wantCode(t, "short password", call(t, addr, remoting.AuthCreateUser, map[string]string{"username": "bob"}, short),
		remoting.InvalidParameter, "The password is shorter than 8 characters")
	wantCode(t, "no username", call(t, addr, remoting.AuthCreateUser, nil, short), remoting.InvalidParameter, "The username is blank")
	wantCode(t, "garbage body", call(t, addr, remoting.AuthCreateUser, map[string]string{"username": "bob"}, []byte("{not json")),
		remoting.InvalidParameter, "not a UserInfo")
	wantCode(t, "acl of a missing user", call(t, addr, remoting.AuthCreateACL, map[string]string{"subject": "User:bob"}, deny),
		remoting.InvalidParameter, "is not the header's")
	bobACL := strings.ReplaceAll(string(deny), "User:alice", "User:bob")
	wantCode(t, "acl of a missing user", call(t, addr, remoting.AuthCreateACL, map[string]string{"subject": "User:bob"}, []byte(bobACL)),
		remoting.NoPermission, "The subject of User:bob is not exist.")
	cluster := strings.ReplaceAll(string(deny), "Topic:orders-secret", "Cluster:DefaultCluster")
	wantCode(t, "cluster resource", call(t, addr, remoting.AuthCreateACL, map[string]string{"subject": "User:alice"}, []byte(cluster)),
		remoting.InvalidParameter, "no Cluster resources")
	wantCode(t, "update missing user", call(t, addr, remoting.AuthUpdateUser, map[string]string{"username": "bob"},
		[]byte(`{"userStatus":"disable"}`)), remoting.NoPermission, "The user is not exist")
	wantCode(t, "delete missing acl entry's subject", call(t, addr, remoting.AuthDeleteACL, map[string]string{"subject": "User:bob"}, nil),
		remoting.NoPermission, "The subject is not exist.")
	if _, ok := dirOf.Lookup("bob"); ok {
		t.Fatal("a refused user exists")
	}

	// Persisted beside the store, private, and back after a restart.
	for _, name := range []string{"users.json", "acls.json"} {
		fi, err := os.Stat(filepath.Join(dir, "acl", name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	n = processtest.Start(t, processtest.Options{Dir: dir})
	addr = n.BrokerAddr()
	dirOf = n.Broker().Pipeline().ACL()
	alice, ok = dirOf.Lookup("alice")
	if !ok || alice.SecretKey() != "alice-pw-1" {
		t.Fatal("alice lost in the restart")
	}
	if ok, _ := alice.Allows(auth.Need{Kind: auth.KindTopic, Name: "orders-secret", Perm: auth.PermPub}, loopback); ok {
		t.Fatal("the Deny lost in the restart")
	}
	if ok, _ := alice.Allows(auth.Need{Kind: auth.KindGroup, Name: "billing", Perm: auth.PermSub}, loopback); !ok {
		t.Fatal("the Allow lost in the restart")
	}

	// Disabled: not found. Deleted: gone with the ACL.
	mustOK(t, "disable", call(t, addr, remoting.AuthUpdateUser, map[string]string{"username": "alice"}, []byte(`{"userStatus":"disable"}`)))
	if _, ok := dirOf.Lookup("alice"); ok {
		t.Fatal("a disabled user is found")
	}
	mustOK(t, "delete user", call(t, addr, remoting.AuthDeleteUser, map[string]string{"username": "alice"}, nil))
	resp = mustOK(t, "list acls after delete", call(t, addr, remoting.AuthListACL, nil, nil))
	if len(resp.Body) != 0 {
		t.Fatalf("the deleted user's ACL is listed: %s", resp.Body)
	}
	resp = mustOK(t, "list users after delete", call(t, addr, remoting.AuthListUser, nil, nil))
	if len(resp.Body) != 0 {
		t.Fatalf("the deleted user is listed: %s", resp.Body)
	}
}

// TestACL2DamagedFileStopsStart: a damaged users file is a start-up error
// naming it, not an empty (or older) set of users.
func TestACL2DamagedFileStopsStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "acl"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "acl", "users.json")
	if err := os.WriteFile(path, []byte(`{"format":1,"users":[{"username":"alice",`), 0o600); err != nil {
		t.Fatal(err)
	}
	bc := pipeline.DefaultConfig()
	bc.DataDir, bc.Listen = dir, "127.0.0.1:0"
	bc.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	bc.DiskUsage = func() (float64, error) { return 0.1, nil }
	n, err := process.Start(process.Config{Broker: bc, RunBroker: true, NamesrvListen: "127.0.0.1:0", Logger: bc.Logger})
	if err == nil {
		_ = n.Stop(context.Background())
		t.Fatal("the broker started on a damaged users file")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("start error %v, want one naming %s", err, path)
	}
}
