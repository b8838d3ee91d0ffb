package grpctest

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// sendOne sends one message with a fresh SDK producer.
func sendOne(t *testing.T, n *process.Node, topic string) string {
	t.Helper()
	p := producer(t, sdkConfig(n, ""), []string{topic})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte("over " + topic)})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	_ = p.GracefulStop()
	return rs[0].MessageID
}

// rawRoute asks for topic's route with creds (nil: plaintext) and returns
// the gRPC-level error.
func rawRoute(addr, topic string, creds credentials.TransportCredentials) error {
	var opt grpc.DialOption
	if creds == nil {
		opt = grpc.WithTransportCredentials(insecureCreds())
	} else {
		opt = grpc.WithTransportCredentials(creds)
	}
	conn, err := grpc.NewClient(addr, opt)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = v2.NewMessagingServiceClient(conn).QueryRoute(withClientID(ctx, "test@1@1@tls"),
		&v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
	return err
}

// TestTLSPermissive: the SDK's default (TLS, any certificate) and plain
// h2c both work on one port.
func TestTLSPermissive(t *testing.T) {
	// Serial: it needs the SDK's TLS switch (withSSL) to itself, which a
	// parallel test would wait for while holding up every other one.
	n := node(t, nil, func(c *process.Config) {
		c.TLS = process.TLSConfig{Mode: netloop.TLSPermissive, Dir: tempDir(t, "tls")}
	})
	topic := processtest.Unique("grpc_tls")
	processtest.CreateTopic(t, n, topic, 2)
	withSSL(t, true)
	sendOne(t, n, topic)
	if got := len(byUniq(storedRecords(t, n, topic, 2, 1))); got != 1 {
		t.Fatalf("%d of 1 message stored", got)
	}
	// The SDK's TLS switch is process-global and its connections are
	// cached per endpoint: plaintext is checked with a raw client.
	if err := rawRoute(n.GRPCAddr(), topic, nil); err != nil {
		t.Fatalf("plaintext call on a permissive port: %v", err)
	}
	if err := rawRoute(n.GRPCAddr(), topic, credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})); err != nil { //nolint:gosec // self-signed test certificate
		t.Fatalf("TLS call on a permissive port: %v", err)
	}
}

// TestTLSEnforcing: TLS works, plaintext is refused.
func TestTLSEnforcing(t *testing.T) {
	// Serial: it needs the SDK's TLS switch (withSSL) to itself, which a
	// parallel test would wait for while holding up every other one.
	n := processtest.Start(t, processtest.Options{ClientTLS: remoting.InsecureTLS(), MutateNode: func(c *process.Config) {
		c.GRPC.Listen = "127.0.0.1:0"
		c.TLS = process.TLSConfig{Mode: netloop.TLSEnforcing, Namesrv: true, Dir: tempDir(t, "tls")}
	}})
	topic := processtest.Unique("grpc_tls_enf")
	withSSL(t, true)
	sendOne(t, n, topic) // auto-created by the route query
	if err := rawRoute(n.GRPCAddr(), topic, nil); err == nil {
		t.Fatal("plaintext call on an enforcing port succeeded")
	}
	if err := rawRoute(n.GRPCAddr(), topic, credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})); err != nil { //nolint:gosec // self-signed test certificate
		t.Fatalf("TLS call on an enforcing port: %v", err)
	}
}

// TestTLSDisabled: a port without TLS refuses a TLS client.
func TestTLSDisabled(t *testing.T) {
	t.Parallel() // each has its own broker; the SDK's start waits in 1 s steps
	n := node(t, nil, nil)
	if err := rawRoute(n.GRPCAddr(), "TBW102", credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})); err == nil { //nolint:gosec // test
		t.Fatal("TLS call on a plaintext-only port succeeded")
	}
	if err := rawRoute(n.GRPCAddr(), "TBW102", nil); err != nil {
		t.Fatalf("plaintext call: %v", err)
	}
}
