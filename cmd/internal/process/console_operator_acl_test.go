package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

const operatorACL = `accounts:
  - accessKey: admin-ops
    secretKey: admin-ops-secret
    admin: true
  - accessKey: team-a-app
    secretKey: team-a-secret
    topicPerms: [acl-orders=SUB, "%DLQ%g_a=SUB"]
    groupPerms: [g_a=SUB]
`

// TestConsoleOperatorPagesACL: under an ACL the clients, lag and dead
// letters an account sees are those of the groups and topics it has SUB
// on, and its test send and resend are the broker API's to refuse (no
// PUB; no SUB on another group's DLQ), while the admin's pass.
func TestConsoleOperatorPagesACL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(operatorACL), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := auth.Credentials{AccessKey: "admin-ops", SecretKey: "admin-ops-secret"}
	n := processtest.Start(t, processtest.Options{Admin: admin, Metrics: true, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
		c.Console = true
	}})
	cb := process.ConsoleOf(n)
	ctx := context.Background()
	ops := console.Credentials{AccessKey: admin.AccessKey, SecretKey: admin.SecretKey}
	team := console.Credentials{AccessKey: "team-a-app", SecretKey: "team-a-secret"}
	for _, name := range []string{"acl-orders", "%DLQ%g_a", "%DLQ%g_b"} {
		if err := cb.CreateTopic(ctx, ops, console.Topic{Name: name, ReadQueues: 1, WriteQueues: 1, Perm: 6}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	waitUntil(t, 15*time.Second, func() bool {
		req := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "acl-orders"}, nil)
		return processtest.InvokeSigned(t, n.NamesrvAddr(), req, admin).Code == remoting.Success
	})
	creds := consumer.WithCredentials(primitive.Credentials{AccessKey: admin.AccessKey, SecretKey: admin.SecretKey})
	processtest.PushConsumer(t, n.NamesrvAddr(), "g_a", "acl-orders", "*", creds)
	processtest.PushConsumer(t, n.NamesrvAddr(), "g_b", "acl-orders", "*", creds)
	waitUntil(t, 20*time.Second, func() bool {
		cs, err := cb.Connections(ctx, ops)
		return err == nil && len(cs.Groups) == 2
	})
	cs, err := cb.Connections(ctx, team)
	if err != nil || len(cs.Groups) != 1 || cs.Groups[0].Group != "g_a" || len(cs.Clients) != 1 || cs.Clients[0].Consumers[0] != "g_a" {
		t.Fatalf("team-a's clients: %+v, %v", cs, err)
	}
	qs, err := cb.DeadLetterQueues(ctx, team)
	if err != nil || len(qs) != 1 || qs[0].Topic != "%DLQ%g_a" {
		t.Fatalf("team-a's DLQs: %+v, %v", qs, err)
	}
	if _, err := cb.TestSend(ctx, team, console.TestMessage{Topic: "acl-orders", Body: "x"}); err == nil || !strings.Contains(err.Error(), "PUB") {
		t.Fatalf("team-a's test send without PUB: %v", err)
	}
	if _, err := cb.TestSend(ctx, ops, console.TestMessage{Topic: "acl-orders", Body: "x"}); err != nil {
		t.Fatalf("admin's test send: %v", err)
	}
	if _, err := cb.DeadLetters(ctx, team, "%DLQ%g_b", -1, 10); err == nil {
		t.Fatal("team-a read another group's DLQ")
	}
	if _, err := cb.Resend(ctx, team, console.ResendRequest{Topic: "%DLQ%g_b", To: console.ResendToRetry}); err == nil ||
		!strings.Contains(err.Error(), "SUB") {
		t.Fatalf("team-a's resend from another group's DLQ: %v", err)
	}
}
