package main

// The whole cluster through one gRPC endpoint: two brokers (an all-in-one
// process with the name server, and `wheelmq broker`), a v5 producer that
// knows only the first one's endpoint, and the second SIGKILLed
// mid-stream.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// v5Setup is the v5 SDK's one-time setup of this package's tests.
func v5Setup() {
	v5SDKOnce.Do(func() {
		_ = os.Setenv(rmq.CLIENT_LOG_ROOT, os.TempDir()+"/wheelmq-test-rocketmq-v5")
		_ = os.Setenv(rmq.CLIENT_LOG_LEVEL, "error")
		rmq.ResetLogger()
		rmq.EnableSsl = false
	})
}

// startBrokerProc runs `wheelmq broker` registering with namesrv, on ports
// the test holds, and waits for /healthz and its registration.
func startBrokerProc(t *testing.T, bin, namesrv string, extra ...string) *proc {
	t.Helper()
	p := &proc{namesrv: namesrv, broker: processtest.ReserveAddr(t), metrics: processtest.ReserveAddr(t), grpc: processtest.ReserveAddr(t)}
	args := append([]string{"broker", "--namesrv", namesrv, "--data", t.TempDir(), "--listen", p.broker,
		"--metrics-listen", p.metrics, "--grpc-listen", p.grpc, "--log-level", "warn"}, extra...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stderr = io.MultiWriter(os.Stderr, &p.stderr)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start wheelmq broker: %v", err)
	}
	p.exited = make(chan struct{})
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }() // ends with the process (Cleanup kills it)
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
	waitHealthz(t, p, 20*time.Second)
	processtest.WaitBrokerRegistered(t, namesrv, p.broker, 20*time.Second)
	return p
}

// waitHealthz waits for p's /healthz to answer 200.
func waitHealthz(t *testing.T, p *proc, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := testHTTP.Get("http://" + p.metrics + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("wheelmq exited: %v\n%s", p.waitErr, lastBytes(p.stderr.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("wheelmq did not become healthy within %v: %v\n%s", within, err, lastBytes(p.stderr.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createTopicAt creates topic with n queues on the broker at addr.
func createTopicAt(t *testing.T, addr, topic string, n int) {
	t.Helper()
	q := strconv.Itoa(n)
	resp := processtest.Invoke(t, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6", "topicFilterType": "SINGLE_TAG"}, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s at %s: %d %s", topic, addr, resp.Code, resp.Remark)
	}
}

// routeEndpoints maps each broker name of a route to its endpoint (the
// first listed: its master; a replicated group's replicas follow) and
// counts its queues.
func routeEndpoints(qs []*v2.MessageQueue) (map[string]string, map[string]int) {
	eps, counts := map[string]string{}, map[string]int{}
	for _, q := range qs {
		a := q.GetBroker().GetEndpoints().GetAddresses()
		if len(a) >= 1 {
			eps[q.GetBroker().GetName()] = a[0].GetHost() + ":" + strconv.Itoa(int(a[0].GetPort()))
		}
		counts[q.GetBroker().GetName()]++
	}
	return eps, counts
}

// waitRoute asks endpoint for topic's route until ok accepts it.
func waitRoute(t *testing.T, endpoint, topic string, within time.Duration, ok func([]*v2.MessageQueue) bool) []*v2.MessageQueue {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc dial %s: %v", endpoint, err)
	}
	defer conn.Close()
	c := v2.NewMessagingServiceClient(conn)
	deadline := time.Now().Add(within)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "route-test@1", "x-mq-language", "GO")
		r, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}})
		cancel()
		if err == nil && r.GetStatus().GetCode() == v2.Code_OK && ok(r.GetMessageQueues()) {
			return r.GetMessageQueues()
		}
		last = fmt.Sprintf("%v %v", r.GetStatus(), err)
		if err == nil {
			eps, counts := routeEndpoints(r.GetMessageQueues())
			last += fmt.Sprintf(" endpoints %v queues %v", eps, counts)
		}
		if time.Now().After(deadline) {
			t.Fatalf("route of %s at %s not as expected within %v; last: %s", topic, endpoint, within, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestGRPCClusterThroughOneEndpoint: a v5 producer that knows only broker
// a's endpoint gets a route with both brokers' queues, each with its own
// broker's endpoint, and sends to both; broker b is SIGKILLed mid-stream
// and the sends go on, acknowledged by a; a's routes drop b at once.
//
// The Go SDK v5.1.4 retries a failed send on the same queue
// (TakeMessageQueues picks one queue: apache/rocketmq-clients#1324, fixed
// after 5.1.4), dials a dead endpoint for 5 s per attempt while holding its
// connection table, and reads routes again only every 30 s. So until its
// refresh a send it puts on b's queue fails, and once it read a's route
// again (seen in a's QueryRoute count) every send must be acknowledged at
// once. It takes that long (about 45 s, in parallel with the package's
// other tests) because of the SDK, not of the brokers: a's routes drop b
// as soon as it dies.
func TestGRPCClusterThroughOneEndpoint(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	v5Setup()
	began := time.Now()
	phase := func(what string) { t.Logf("%6.2fs %s", time.Since(began).Seconds(), what) }
	bin := buildBinary(t)
	a := startProc(t, bin, t.TempDir(), "--broker-name", "broker-a")
	b := startBrokerProc(t, bin, a.namesrv, "--broker-name", "broker-b")
	topic := processtest.Unique("grpccluster")
	const queues = 4
	createTopicAt(t, a.broker, topic, queues)
	createTopicAt(t, b.broker, topic, queues)

	want := map[string]string{"broker-a": a.grpc, "broker-b": b.grpc}
	waitRoute(t, a.grpc, topic, 10*time.Second, func(qs []*v2.MessageQueue) bool {
		eps, counts := routeEndpoints(qs)
		return len(qs) == 2*queues && counts["broker-a"] == queues && counts["broker-b"] == queues &&
			eps["broker-a"] == want["broker-a"] && eps["broker-b"] == want["broker-b"]
	})

	phase("route through a lists both")
	p, err := rmq.NewProducer(&rmq.Config{Endpoint: a.grpc, Credentials: &credentials.SessionCredentials{}}, rmq.WithTopics(topic), rmq.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- p.Start() }() // Start blocks until both endpoints answered settings
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start producer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("producer Start did not return within 20 s")
	}
	t.Cleanup(func() { _ = p.GracefulStop(); phase("producer stopped") })
	phase("producer started")

	// Before the kill: every send acknowledged at once, by both brokers.
	// After it, until the SDK reads a's route again: a send the SDK puts
	// on one of a's queues is acknowledged, one it puts on b's fails (it
	// is not retried: the SDK would only try the same dead endpoint, and
	// each try holds its connection table for its 5 s dial, which can
	// make its route refresh time out). Then the SDK's refresh reads a's
	// route without b, and every send is acknowledged at once, by a.
	const killAt, during, after = 80, 5, 40
	ackedBy := map[string][]string{} // endpoint -> bodies
	failures := 0
	send := func(i int) bool {
		body := fmt.Sprintf("m-%04d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rs, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(body)})
		cancel()
		if err != nil {
			failures++
			return false
		}
		eps, _ := routeEndpoints([]*v2.MessageQueue{{Broker: &v2.Broker{Name: "x", Endpoints: rs[0].Endpoints}}})
		ackedBy[eps["x"]] = append(ackedBy[eps["x"]], body)
		return true
	}
	i := 0
	for ; i < killAt; i++ {
		if !send(i) {
			t.Fatalf("message %d failed before the kill", i)
		}
	}
	if len(ackedBy[a.grpc]) == 0 || len(ackedBy[b.grpc]) == 0 {
		t.Fatalf("sends not spread over both brokers: %v", maps.Collect(maps.All(ackedBy)))
	}
	ackedByA, ackedByB := len(ackedBy[a.grpc]), len(ackedBy[b.grpc])
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	phase("b killed")
	// a's routes drop b as soon as the name server saw its connection close.
	waitRoute(t, a.grpc, topic, 10*time.Second, func(qs []*v2.MessageQueue) bool {
		eps, counts := routeEndpoints(qs)
		return len(qs) == queues && counts["broker-a"] == queues && eps["broker-a"] == a.grpc
	})
	phase("route through a lists a only")
	queried := routeQueries(t, a.metrics)
	for end := i + during; i < end; i++ {
		send(i)
	}
	if len(ackedBy[a.grpc]) == ackedByA {
		t.Fatalf("none of %d sends after the kill acknowledged by a (%d failed)", during, failures)
	}
	phase(fmt.Sprintf("%d sends after the kill: %d acknowledged by a, %d failed", during, len(ackedBy[a.grpc])-ackedByA, failures))
	waitRouteRefresh(t, a.metrics, queried, 75*time.Second)
	phase("the SDK read the route again")
	for end := i + after; i < end; i++ {
		if !send(i) {
			t.Fatalf("message %d failed after the SDK's route refresh", i)
		}
	}
	if len(ackedBy[b.grpc]) != ackedByB || len(ackedBy) != 2 {
		t.Fatalf("acknowledged by b after its SIGKILL, or by other endpoints: %v", slices.Collect(maps.Keys(ackedBy)))
	}
	t.Logf("%d messages: acknowledged by a %d, by b %d (all before the kill); failed sends %d",
		i, len(ackedBy[a.grpc]), len(ackedBy[b.grpc]), failures)

	// Everything a acknowledged is stored on a.
	var stored [][]byte
	for q := range int32(queues) {
		for _, r := range processtest.WaitQueue(t, a.broker, topic, q, 0, 5*time.Second) {
			stored = append(stored, r.Body)
		}
	}
	for _, body := range ackedBy[a.grpc] {
		if !slices.ContainsFunc(stored, func(s []byte) bool { return bytes.Equal(s, []byte(body)) }) {
			t.Fatalf("%s acknowledged by a but not stored there (%d stored)", body, len(stored))
		}
	}
}

// routeQueries is how many QueryRoute calls the gRPC endpoint of the
// process whose /metrics is at metrics answered OK
// (wheelmq_grpc_rpcs_total{method="QueryRoute",code="OK"}).
func routeQueries(t *testing.T, metrics string) float64 {
	return metricSum(t, metrics, "wheelmq_grpc_rpcs_total", `method="QueryRoute"`, `code="OK"`)
}

// waitRouteRefresh waits (up to within) until the endpoint whose process
// serves /metrics at metrics has answered more route queries than before:
// the SDK's periodic route refresh (every 30 s; one can time out in the
// SDK itself while its heartbeat dials the dead endpoint, holding its
// connection table, so the wait covers two).
func waitRouteRefresh(t *testing.T, metrics string, before float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for routeQueries(t, metrics) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("no route query at %s within %v (the SDK refreshes every 30 s)", metrics, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
