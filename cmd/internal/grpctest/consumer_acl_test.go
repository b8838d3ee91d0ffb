package grpctest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

const consumeACL = `accounts:
  - accessKey: admin-ops
    secretKey: admin-ops-secret
    admin: true
  - accessKey: reader-app
    secretKey: reader-app-secret
    topicPerms: [orders=SUB]
    groupPerms: [readers=SUB]
    defaultGroupPerm: DENY
  - accessKey: writer-app
    secretKey: writer-app-secret
    topicPerms: [orders=PUB]
    defaultGroupPerm: DENY
`

// The consumption RPCs call the broker in process and the broker API's ACL
// decides them: an account with SUB on the topic and the group receives
// and acks; one without is refused FORBIDDEN and receives nothing.
func TestGRPCSignedSimpleConsumer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(consumeACL), 0o600); err != nil {
		t.Fatal(err)
	}
	_, off := time.Now().Zone()
	n := processtest.Start(t, processtest.Options{Admin: grpcAdmin, MutateNode: func(c *process.Config) {
		c.GRPC.Listen = "127.0.0.1:0"
		c.ACL = process.ACLConfig{File: path}
		c.GRPC.SignatureOffsets = []time.Duration{time.Duration(off) * time.Second}
	}})
	resp := processtest.InvokeSigned(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "orders", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil), grpcAdmin)
	if resp.Code != remoting.Success {
		t.Fatalf("create orders: %d %s", resp.Code, resp.Remark)
	}
	withSSL(t, false)
	signed := func(group, ak, sk string) *rmq.Config {
		cfg := sdkConfig(n, group)
		cfg.Credentials = &credentials.SessionCredentials{AccessKey: ak, AccessSecret: sk}
		return cfg
	}
	p := producer(t, signed("", "writer-app", "writer-app-secret"), []string{"orders"})
	sendBodies(t, p, "orders", "m", 1)

	// The writer may not consume (no SUB on orders, no group).
	w := simpleConsumer(t, signed("writers", "writer-app", "writer-app-secret"), "orders", rmq.SUB_ALL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	msgs, err := w.Receive(ctx, 4, 10*time.Second)
	cancel()
	var st *rmq.ErrRpcStatus
	if !errors.As(err, &st) || st.Code != int32(v2.Code_FORBIDDEN) || len(msgs) != 0 {
		t.Fatalf("a receive by an account without SUB: %d messages, %v; want FORBIDDEN", len(msgs), err)
	}

	r := simpleConsumer(t, signed("readers", "reader-app", "reader-app-secret"), "orders", rmq.SUB_ALL)
	got := receiveUntil(t, r, 1, 10*time.Second, 20*time.Second)
	if len(got) != 1 {
		t.Fatalf("the reader received %d of 1", len(got))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Ack(ctx, got[0]); err != nil {
		t.Fatalf("the reader's ack: %v", err)
	}
	if again := receiveUntil(t, r, 1, 10*time.Second, 12*time.Second); len(again) != 0 {
		t.Fatalf("an acked message came again (attempt %d)", again[0].GetDeliveryAttempt())
	}
}
