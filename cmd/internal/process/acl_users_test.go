package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/adminbody"
)

// ACL 2.0 users made at run time (3001, 3006) are accounts of the checks
// on both ports, next to the file's; only an admin may make them; and a
// deleted user is refused at once, also on a connection whose hot path
// had its account cached.
func TestACLWithACL2Users(t *testing.T) {
	n, _ := startACLNode(t, aclFile("orders=SUB"))
	createTopicAs(t, n, aclAdmin, "orders", 1)
	b, ns := n.BrokerAddr(), n.NamesrvAddr()
	erin := auth.Credentials{AccessKey: "erin-user", SecretKey: "erin-password-1"}
	user, _ := adminbody.EncodeAuth(adminbody.UserInfo{Username: erin.AccessKey, Password: erin.SecretKey, UserType: "Normal"})
	policy, _ := adminbody.EncodeAuth(adminbody.AclInfo{Subject: "User:" + erin.AccessKey, Policies: []adminbody.PolicyInfo{{
		Entries: []adminbody.PolicyEntryInfo{{Actions: []string{"Pub"}, Decision: "Allow", Resource: "Topic:orders"}}}}})
	createUser := func() *remoting.Command {
		return remoting.NewRequest(remoting.AuthCreateUser, map[string]string{"username": erin.AccessKey}, user)
	}
	if r := signedInvoke(t, b, createUser(), aclAlice); r.Code != remoting.NoPermission {
		t.Fatalf("a non-admin created a user: %d %s", r.Code, r.Remark)
	}
	if r := signedInvoke(t, b, createUser(), aclAdmin); r.Code != remoting.Success {
		t.Fatalf("create user: %d %s", r.Code, r.Remark)
	}
	if r := signedInvoke(t, b, remoting.NewRequest(remoting.AuthCreateACL, map[string]string{"subject": "User:" + erin.AccessKey}, policy),
		aclAdmin); r.Code != remoting.Success {
		t.Fatalf("create acl: %d %s", r.Code, r.Remark)
	}
	// The route (name server) and sends (broker, hot path) over one kept
	// connection.
	if r := signedInvoke(t, ns, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "orders"}, nil), erin); r.Code != remoting.Success {
		t.Fatalf("erin's route lookup: %d %s", r.Code, r.Remark)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, b, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	send := func(topic string) *remoting.Command {
		t.Helper()
		req := processtest.SendRequest(topic, 0, []byte("from erin"), nil)
		erin.Sign(req)
		resp, err := cl.Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for range 3 {
		if r := send("orders"); r.Code != remoting.Success {
			t.Fatalf("erin's send: %d %s", r.Code, r.Remark)
		}
	}
	createTopicAs(t, n, aclAdmin, "other", 1)
	if r := send("other"); r.Code != remoting.NoPermission {
		t.Fatalf("erin's send without a policy: %d %s", r.Code, r.Remark)
	}
	if r := signedInvoke(t, b, remoting.NewRequest(remoting.AuthDeleteUser, map[string]string{"username": erin.AccessKey}, nil),
		aclAdmin); r.Code != remoting.Success {
		t.Fatalf("delete user: %d %s", r.Code, r.Remark)
	}
	if r := send("orders"); r.Code != remoting.NoPermission {
		t.Fatalf("a deleted user's send: %d %s", r.Code, r.Remark)
	}
	waitFor(t, 5*time.Second, "erin's 3 messages", func() bool { return storedIn(n, "orders", 1) >= 3 })
	if got := storedIn(n, "orders", 1); got != 3 {
		t.Fatalf("orders holds %d messages, want 3", got)
	}
}
