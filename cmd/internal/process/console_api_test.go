package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestConsoleCallsAreTheAPIs reads messages sent by the official client
// through the console's look-ups, group page, reset and cluster view as
// three accounts of an ACL file: each answer and each refusal is the broker
// API's (its Authorizer), with the rules a remoting client meets. A SUB
// account finds a topic's delayed messages by key (their timer copies),
// which it could not while the console queried the timer topic itself.
func TestConsoleCallsAreTheAPIs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclFile("orders=SUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	n := processtest.Start(t, processtest.Options{Admin: aclAdmin, Metrics: true, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: time.Minute}
		c.Console = true
	}})
	if r := createTopicAs(t, n, aclAdmin, "orders", 1); r.Code != remoting.Success {
		t.Fatalf("create orders: %d %s", r.Code, r.Remark)
	}
	ctx := context.Background()
	p := processtest.Producer(t, n.NamesrvAddr(), producer.WithCredentials(goCreds(aclAlice)))
	plain := primitive.NewMessage("orders", []byte("plain body"))
	plain.WithKeys([]string{"order-9"})
	sent, err := p.SendSync(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	delayed := primitive.NewMessage("orders", []byte("delayed body"))
	delayed.WithKeys([]string{"order-9"})
	delayed.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10))
	if _, err := p.SendSync(ctx, delayed); err != nil {
		t.Fatal(err)
	}
	// The consume-queue entry of the plain send follows its answer.
	waitFor(t, 10*time.Second, "the plain message in orders' queue 0", func() bool {
		cq := n.Broker().Store().Queues.Lookup("orders", 0)
		return cq != nil && cq.MaxOffset() >= 1
	})
	cb := process.ConsoleOf(n)
	admin := console.Credentials{AccessKey: aclAdmin.AccessKey, SecretKey: aclAdmin.SecretKey}
	bob := console.Credentials{AccessKey: aclBob.AccessKey, SecretKey: aclBob.SecretKey} // SUB on orders and g_bob
	carol := console.Credentials{AccessKey: "carol-app", SecretKey: "carol-app-secret"}  // SUB on g_carol only
	forbidden := func(what string, err error) {
		t.Helper()
		if broker.StatusOf(err) != broker.Forbidden {
			t.Fatalf("%s: %v, want FORBIDDEN", what, err)
		}
	}

	// By queue offset (the pull path's reader) and by offset message id.
	got, err := cb.FindMessages(ctx, bob, console.MessageQuery{Topic: "orders", Queue: 0, Offset: 0, ByOffset: true})
	if err != nil || len(got) != 1 || string(got[0].Body) != "plain body" {
		t.Fatalf("bob by queue offset: %+v %v", got, err)
	}
	_, err = cb.FindMessages(ctx, carol, console.MessageQuery{Topic: "orders", Queue: 0, Offset: 0, ByOffset: true})
	forbidden("carol by queue offset", err)
	if _, err := cb.FindMessages(ctx, bob, console.MessageQuery{Topic: "orders", Queue: 0, Offset: 5, ByOffset: true}); broker.StatusOf(err) != broker.NotFound {
		t.Fatalf("bob past the queue's end: %v, want NOT_FOUND", err)
	}
	got, err = cb.FindMessages(ctx, bob, console.MessageQuery{ID: sent.OffsetMsgID})
	if err != nil || len(got) != 1 || got[0].MsgID != sent.MsgID {
		t.Fatalf("bob by offset message id: %+v %v", got, err)
	}
	_, err = cb.FindMessages(ctx, carol, console.MessageQuery{ID: sent.OffsetMsgID})
	forbidden("carol by offset message id (checked on the record's topic)", err)

	// By key: the plain message and the delayed one's timer copy, once
	// the index has both.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = cb.FindMessages(ctx, bob, console.MessageQuery{Topic: "orders", Key: "order-9"})
		if err != nil {
			t.Fatalf("bob by key: %v", err)
		}
		if len(got) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	pending := 0
	for _, m := range got {
		if m.TimerPending {
			pending++
		}
	}
	if len(got) != 2 || pending != 1 {
		t.Fatalf("bob by key: %d messages, %d pending timers; want the plain one and the timer copy", len(got), pending)
	}
	_, err = cb.FindMessages(ctx, carol, console.MessageQuery{Topic: "orders", Key: "order-9"})
	forbidden("carol by key", err)

	// The group page and the reset.
	if _, err := cb.GroupDetail(ctx, bob, "g_bob"); err != nil {
		t.Fatalf("bob's group: %v", err)
	}
	_, err = cb.GroupDetail(ctx, carol, "g_bob")
	forbidden("carol on g_bob", err)
	forbidden("bob resets", cb.ResetGroup(ctx, bob, "g_bob", "orders", time.Now()))
	if err := cb.ResetGroup(ctx, admin, "no-such-group", "orders", time.Now()); broker.StatusOf(err) != broker.GroupNotFound {
		t.Fatalf("admin resets an unknown group: %v, want GROUP_NOT_FOUND", err)
	}

	// The cluster view is an admin's; this broker's row is its own state.
	_, err = cb.Cluster(ctx, bob)
	forbidden("bob's cluster view", err)
	cl, err := cb.Cluster(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Brokers) != 1 || cl.Brokers[0].Addr != n.BrokerAddr() || cl.Brokers[0].Role != "standalone" ||
		cl.Brokers[0].Version != broker.VersionDesc {
		t.Fatalf("cluster view: %+v", cl.Brokers)
	}
	var be *broker.Error
	if err := cb.DeleteTopic(ctx, bob, "orders"); !errors.As(err, &be) || !strings.Contains(be.Remark, "not an admin") {
		t.Fatalf("bob deletes a topic: %v", err)
	}
}
