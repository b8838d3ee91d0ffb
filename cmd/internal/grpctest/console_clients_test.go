package grpctest

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/wheelmq/wheelmq/actors/broker"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// progressOf asks the broker API for group's progress on topic's queue 0.
func progressOf(t *testing.T, n *process.Node, group, topic string) broker.QueueProgress {
	t.Helper()
	ch := make(chan *broker.ConsumeStats, 1)
	req := broker.ConsumeStatsRequest{Group: group, Pop: true}
	n.Broker().Core().ConsumeStats(broker.Caller{Protocol: broker.ByBroker}, req, func(gp *broker.ConsumeStats, err *broker.Error) {
		if err != nil {
			t.Errorf("group progress: %v", err)
		}
		ch <- gp
	})
	select {
	case gp := <-ch:
		for _, q := range gp.Queues {
			if q.Topic == topic && q.QueueID == 0 {
				return q
			}
		}
		t.Fatalf("no progress of %s on %s: %+v", group, topic, gp)
	case <-time.After(10 * time.Second):
		t.Fatal("group progress: no answer")
	}
	return broker.QueueProgress{}
}

// clientsPage reads the console's clients page.
func clientsPage(t *testing.T, n *process.Node) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + n.MetricsAddr() + "/clients")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `id="error"`) {
		t.Fatalf("clients page: %d\n%s", resp.StatusCode, b)
	}
	return string(b)
}

// rowOf is the clients page's lag row of group and topic ("": the
// group's first row, which names its type and protocols), its cells' text.
func rowOf(page, group, topic string) []string {
	t := regexp.QuoteMeta(topic)
	if topic == "" {
		t = `[^"]*`
	}
	re := regexp.MustCompile(`(?s)<tr data-group="` + regexp.QuoteMeta(group) + `" data-topic="` + t + `">(.*?)</tr>`)
	m := re.FindStringSubmatch(page)
	if m == nil {
		return nil
	}
	var cells []string
	for _, c := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(m[1], -1) {
		cells = append(cells, regexp.MustCompile(`<[^>]+>`).ReplaceAllString(c[1], ""))
	}
	return cells
}

// TestConsoleClientsOfEveryProtocol: a v5 SDK producer and SimpleConsumer
// (gRPC) and an official remoting Go client producer and push consumer on
// one broker are all listed, each with its protocol; the SimpleConsumer
// group's lag counts what it has not acked, its received-not-acked
// messages shown in flight apart, and both fall as it acks; the push
// group's row counts what it has committed.
func TestConsoleClientsOfEveryProtocol(t *testing.T) {
	t.Parallel()
	withSSL(t, false)
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) {
		c.GRPC.Listen = "127.0.0.1:0"
		c.Console = true
	}})
	topic := processtest.Unique("clients")
	processtest.CreateTopic(t, n, topic, 1)
	popGroup, pushGroup := topic+"_pop", topic+"_push"
	p := producer(t, sdkConfig(n, ""), []string{topic})
	c := simpleConsumer(t, sdkConfig(n, popGroup), topic, rmq.SUB_ALL)
	sendBodies(t, p, topic, "t", 5)
	processtest.WaitQueue(t, n.BrokerAddr(), topic, 0, 5, 10*time.Second) // the consume-queue entries follow the answers
	got := receiveUntil(t, c, 2, 30*time.Second, 20*time.Second)
	if len(got) < 2 {
		t.Fatalf("received %d", len(got))
	}
	inFlight := len(got)
	q := progressOf(t, n, popGroup, topic)
	if q.BrokerOffset != 5 || q.Lag != 5 || q.InFlight != inFlight {
		t.Fatalf("before acks: %+v (received %d)", q, inFlight)
	}
	page := clientsPage(t, n)
	if row := rowOf(page, popGroup, ""); len(row) != 10 || row[1] != "POP" || row[2] != "grpc" {
		t.Fatalf("the page's first row of %s: %q", popGroup, row)
	}
	if row := rowOf(page, popGroup, topic); len(row) != 10 || row[7] != "5" || row[8] != strconv.Itoa(inFlight) {
		t.Fatalf("the page's row of %s on %s: %q", popGroup, topic, row)
	}
	if !strings.Contains(page, `<td class="protocol">grpc</td>`) || strings.Count(page, `data-protocol="grpc"`) < 2 {
		t.Fatalf("the page lists no gRPC producer and consumer:\n%s", page)
	}
	for _, m := range got {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Ack(ctx, m); err != nil {
			t.Fatalf("ack: %v", err)
		}
		cancel()
	}
	q = progressOf(t, n, popGroup, topic)
	if q.Lag != int64(5-inFlight) || q.InFlight != 0 || q.ConsumerOffset != int64(inFlight) {
		t.Fatalf("after %d acks: %+v", inFlight, q)
	}

	// Remoting: a producer and a push consumer of the official Go client.
	rp := processtest.Producer(t, n.NamesrvAddr())
	if _, err := rp.SendSync(context.Background(), primitive.NewMessage(topic, []byte("remoting"))); err != nil {
		t.Fatal(err)
	}
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), pushGroup, topic, "*")
	if !rec.WaitFor(6, 20*time.Second) {
		t.Fatalf("push consumer got %d of 6", rec.Len())
	}
	// (Its committed offset comes with a later pull: the row's lag is what
	// it commits.)
	page = clientsPage(t, n)
	if row := rowOf(page, pushGroup, ""); len(row) != 10 || row[1] != "PUSH" || row[2] != "remoting" {
		t.Fatalf("the page's first row of %s: %q", pushGroup, row)
	}
	if row := rowOf(page, pushGroup, topic); len(row) != 10 || row[5] != "6" || row[7] != strconv.Itoa(6-atoi(row[6])) {
		t.Fatalf("the page's row of %s on %s: %q", pushGroup, topic, row)
	}
	if !strings.Contains(page, `<td class="protocol">remoting</td>`) {
		t.Fatalf("the page lists no remoting client")
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}
