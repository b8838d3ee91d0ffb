package grpctest

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the RocketMQ 5 SDKs sign with HMAC-SHA1
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc/metadata"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

var (
	grpcAdmin = auth.Credentials{AccessKey: "admin-ops", SecretKey: "admin-ops-secret"}
	grpcAlice = auth.Credentials{AccessKey: "alice-app", SecretKey: "alice-app-secret"}
)

const grpcACL = `accounts:
  - accessKey: admin-ops
    secretKey: admin-ops-secret
    admin: true
  - accessKey: alice-app
    secretKey: alice-app-secret
    topicPerms: [orders=PUB|SUB]
`

// aclNode starts a broker with an ACL and its gRPC endpoint, with topic
// orders.
func aclNode(t *testing.T, mutate func(*process.Config)) *process.Node {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(grpcACL), 0o600); err != nil {
		t.Fatal(err)
	}
	n := processtest.Start(t, processtest.Options{Admin: grpcAdmin, MutateNode: func(c *process.Config) {
		c.GRPC.Listen = "127.0.0.1:0"
		c.ACL = process.ACLConfig{File: path}
		if mutate != nil {
			mutate(c)
		}
	}})
	resp := processtest.InvokeSigned(t, n.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "orders", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil), grpcAdmin)
	if resp.Code != remoting.Success {
		t.Fatalf("create orders: %d %s", resp.Code, resp.Remark)
	}
	return n
}

// signedRoute asks for orders' route signed by creds over the date at.
func signedRoute(t *testing.T, c v2.MessagingServiceClient, creds auth.Credentials, at time.Time) *v2.Status {
	t.Helper()
	date := at.UTC().Format("20060102T150405Z")
	mac := hmac.New(sha1.New, []byte(creds.SecretKey))
	mac.Write([]byte(date))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(withClientID(ctx, "acl@1@1@"+creds.AccessKey), "x-mq-date-time", date,
		"authorization", "MQv2-HMAC-SHA1 Credential="+creds.AccessKey+"//Rocketmq, SignedHeaders=x-mq-date-time, Signature="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "orders"}})
	if err != nil {
		t.Fatalf("query route: %v", err)
	}
	return resp.GetStatus()
}

// A signature is good for a bounded time: 20 minutes old (or ahead) it is
// refused, fresh it is accepted; an unknown key and a wrong secret get the
// same answer; each refusal is counted by reason.
func TestGRPCSignatureFreshAndUniform(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	n := aclNode(t, nil)
	c := rawClient(t, n.GRPCAddr())
	if s := signedRoute(t, c, grpcAlice, time.Now()); s.GetCode() != v2.Code_OK {
		t.Fatalf("fresh signature: %v %s", s.GetCode(), s.GetMessage())
	}
	if s := signedRoute(t, c, grpcAlice, time.Now().Add(-10*time.Minute)); s.GetCode() != v2.Code_OK {
		t.Fatalf("10 minutes old: %v %s", s.GetCode(), s.GetMessage())
	}
	for _, at := range []time.Time{time.Now().Add(-20 * time.Minute), time.Now().Add(20 * time.Minute), time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if s := signedRoute(t, c, grpcAlice, at); s.GetCode() != v2.Code_UNAUTHORIZED {
			t.Fatalf("signature dated %s: %v %s", at, s.GetCode(), s.GetMessage())
		}
	}
	unknown := signedRoute(t, c, auth.Credentials{AccessKey: "nobody-app", SecretKey: "alice-app-secret"}, time.Now())
	wrong := signedRoute(t, c, auth.Credentials{AccessKey: "alice-app", SecretKey: "not-alice-secret"}, time.Now())
	if unknown.GetCode() != v2.Code_UNAUTHORIZED || wrong.GetCode() != v2.Code_UNAUTHORIZED || unknown.GetMessage() != wrong.GetMessage() {
		t.Fatalf("unknown key %v %q, wrong secret %v %q", unknown.GetCode(), unknown.GetMessage(), wrong.GetCode(), wrong.GetMessage())
	}
	for reason, want := range map[string]float64{"stale_date": 3, "unknown_key": 1, "bad_signature": 1} {
		if got := labelled(t, n, "wheelmq_auth_refused_total", "reason", reason); got != want {
			t.Errorf("refusals %s: %v, want %v", reason, got, want)
		}
	}
}

// The Go v5 SDK, signing with its own clock, sends through the ACL. The
// SDK stamps its local time with a "Z": the machine's zone offset is
// accepted as a configured offset.
func TestGRPCSignedSDKSend(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	_, off := time.Now().Zone()
	n := aclNode(t, func(c *process.Config) { c.GRPC.SignatureOffsets = []time.Duration{time.Duration(off) * time.Second} })
	withSSL(t, false)
	cfg := sdkConfig(n, "")
	cfg.Credentials = &credentials.SessionCredentials{AccessKey: grpcAlice.AccessKey, AccessSecret: grpcAlice.SecretKey}
	p := producer(t, cfg, []string{"orders"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &rmq.Message{Topic: "orders", Body: []byte("signed")}); err != nil {
		t.Fatalf("signed send: %v", err)
	}
}

// labelled is the value of name's series with label=value.
func labelled(t *testing.T, n *process.Node, name, label, value string) float64 {
	t.Helper()
	families, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
