package grpctest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	gcreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/message"
)

// sslMu guards the SDK's package-level EnableSsl: a test that needs it on
// holds it exclusively (and restores it), tests with it off (the default
// TestMain sets) share it and may run in parallel.
var sslMu sync.RWMutex

func TestMain(m *testing.M) {
	// The SDK logs to ~/logs/rocketmqlogs at info level by default.
	dir, err := os.MkdirTemp("", "grpctest-sdklogs")
	if err == nil {
		_ = os.Setenv("rocketmq.client.logRoot", dir)
	}
	_ = os.Setenv("rocketmq.client.logLevel", "error")
	rmq.ResetLogger()
	rmq.EnableSsl = false // withSSL turns it on for the tests that need it
	// Every test has its own broker and mostly waits (the SDK starts in 1 s
	// steps, consumers wait out invisible times): 8 at a time, not 2.
	processtest.MinParallel(8)
	code := m.Run()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// node starts a broker with its gRPC endpoint on a free port.
func node(t *testing.T, mutate func(*pipeline.Config), mutateNode func(*process.Config)) *process.Node {
	t.Helper()
	return processtest.Start(t, processtest.Options{Mutate: mutate, MutateNode: func(c *process.Config) {
		c.GRPC.Listen = "127.0.0.1:0"
		if mutateNode != nil {
			mutateNode(c)
		}
	}})
}

// withSSL sets the SDK's EnableSsl for the rest of the test (see sslMu).
func withSSL(t *testing.T, on bool) {
	t.Helper()
	if !on {
		sslMu.RLock()
		t.Cleanup(sslMu.RUnlock)
		return
	}
	sslMu.Lock()
	rmq.EnableSsl = true
	t.Cleanup(func() { rmq.EnableSsl = false; sslMu.Unlock() })
}

// sdkConfig is an SDK configuration for the node's gRPC endpoint.
func sdkConfig(n *process.Node, group string) *rmq.Config {
	return &rmq.Config{Endpoint: n.GRPCAddr(), ConsumerGroup: group,
		Credentials: &credentials.SessionCredentials{}}
}

// producer starts an SDK producer for topics.
func producer(t *testing.T, cfg *rmq.Config, topics []string, opts ...rmq.ProducerOption) rmq.Producer {
	t.Helper()
	p, err := rmq.NewProducer(cfg, append([]rmq.ProducerOption{rmq.WithTopics(topics...)}, opts...)...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	started := make(chan error, 1)
	go func() { started <- p.Start() }() // Start blocks until settings come back
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start producer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("producer Start did not return within 20 s (no settings from the gateway?)")
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	return p
}

// rawClient dials the endpoint in plaintext for raw v2 calls.
func rawClient(t *testing.T, addr string) v2.MessagingServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return v2.NewMessagingServiceClient(conn)
}

// withClientID adds the client id header.
func withClientID(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", id, "x-mq-language", "GO", "x-mq-protocol", "v2")
}

// allRecords reads every stored record of topic's queues over remoting.
func allRecords(t *testing.T, n *process.Node, topic string, queues int) map[int32][]message.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatalf("dial broker: %v", err)
	}
	defer c.Close()
	out := map[int32][]message.Record{}
	for q := range int32(queues) {
		recs, err := processtest.ReadQueue(ctx, c, topic, q)
		if err != nil {
			t.Fatalf("read %s/%d: %v", topic, q, err)
		}
		out[q] = recs
	}
	return out
}

// byUniq indexes records by UNIQ_KEY.
func byUniq(recs map[int32][]message.Record) map[string]message.Record {
	m := map[string]message.Record{}
	for _, rs := range recs {
		for _, r := range rs {
			if id, ok := message.LookupProperty(r.Properties, message.PropUniqKey); ok {
				m[id] = r
			}
		}
	}
	return m
}

// waitFor polls cond every 100 ms until it holds or d passed.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tempDir is a directory for TLS material.
func tempDir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// insecureCreds is plaintext transport credentials.
func insecureCreds() gcreds.TransportCredentials { return insecure.NewCredentials() }
