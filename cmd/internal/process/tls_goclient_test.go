package process_test

// The official Go client over TLS. Its WithTls writes a process-global
// setting (remote.DefaultRemotingClientConfig, see security.md 3.1) that
// would turn every other Go client of the test binary to TLS, so the
// clients run in a child process: the test binary itself, re-run with
// only TestGoClientTLSChild and the node's address in the environment.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// goClientChildEnv carries "namesrv|topic" to the child.
const goClientChildEnv = "WHEELMQ_TEST_GOCLIENT_TLS"

// goClientMessages is how many messages the child sends and consumes.
const goClientMessages = 20

// TestGoClientTLS runs the official Go client with WithTls(true) against a
// node that enforces TLS and one that permits both: it sends and consumes
// through the name server and the broker, all over TLS.
func TestGoClientTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, mode := range []netloop.TLSMode{netloop.TLSEnforcing, netloop.TLSPermissive} {
		t.Run(mode.String(), func(t *testing.T) {
			n := startTLSNode(t, process.TLSConfig{Mode: mode, Namesrv: mode == netloop.TLSEnforcing})
			topic := processtest.Unique("gotls")
			c, err := dialTLS(t, n.BrokerAddr(), insecure())
			if err != nil {
				t.Fatal(err)
			}
			ns, err := dialTLS(t, n.NamesrvAddr(), insecure())
			if err != nil {
				t.Fatal(err)
			}
			createTopicOver(t, c, ns, topic)
			before := n.Broker().NetStats()

			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestGoClientTLSChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), goClientChildEnv+"="+n.NamesrvAddr()+"|"+topic)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestGoClientTLSChild") {
				t.Fatalf("child: %v\n%s", err, out)
			}
			t.Logf("child:\n%s", out)
			after := n.Broker().NetStats()
			if after.TLS-before.TLS < 1 || after.Plaintext != before.Plaintext || after.RefusedBy != before.RefusedBy {
				t.Fatalf("broker port: before %+v, after %+v: want the client's connections all TLS", before, after)
			}
		})
	}
}

// TestGoClientTLSChild is the child of TestGoClientTLS (skipped
// otherwise): a producer and a push consumer with WithTls(true).
func TestGoClientTLSChild(t *testing.T) {
	spec := os.Getenv(goClientChildEnv)
	if spec == "" {
		t.Skip("run by TestGoClientTLS in a child process")
	}
	namesrv, topic, ok := strings.Cut(spec, "|")
	if !ok {
		t.Fatalf("%s=%q", goClientChildEnv, spec)
	}
	p := processtest.Producer(t, namesrv, producer.WithTls(true))
	want := map[string]bool{}
	for i := range goClientMessages {
		body := fmt.Sprintf("tls-%d", i)
		want[body] = true
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d over TLS: %v %+v", i, err, res)
		}
	}
	_, rec := processtest.PushConsumer(t, namesrv, processtest.Unique("cg"), topic, "*", consumer.WithTls(true))
	if !rec.WaitUntil(processtest.HasBodies(want, 0), 60*time.Second) {
		t.Fatalf("consumed %d of %d messages over TLS", rec.Len(), goClientMessages)
	}
}

// createTopicOver creates topic through broker and waits for its route at
// ns.
func createTopicOver(t *testing.T, broker, ns *remoting.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := broker.Invoke(ctx, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("create topic: %v %+v", err, resp)
	}
	for {
		resp, err := ns.Invoke(ctx, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			t.Fatalf("route: %v", err)
		}
		if resp.Code == remoting.Success {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
