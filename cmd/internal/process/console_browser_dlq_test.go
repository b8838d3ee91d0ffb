package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	"github.com/chromedp/chromedp"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// v5SimpleConsumer starts a v5 SDK SimpleConsumer of group on topic over
// n's gRPC endpoint (plaintext; the SDK logs where TestMain points it).
func v5SimpleConsumer(t *testing.T, n *process.Node, group, topic string) (rmq.Producer, rmq.SimpleConsumer) {
	t.Helper()
	cfg := func(g string) *rmq.Config {
		return &rmq.Config{Endpoint: n.GRPCAddr(), ConsumerGroup: g, Credentials: &credentials.SessionCredentials{}}
	}
	p, err := rmq.NewProducer(cfg(""), rmq.WithTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start v5 producer: %v", err)
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	c, err := rmq.NewSimpleConsumer(cfg(group), rmq.WithSimpleAwaitDuration(2*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start v5 simple consumer: %v", err)
	}
	t.Cleanup(func() { _ = c.GracefulStop() })
	return p, c
}

// TestConsoleDeadLettersInBrowser: in headless Chromium, the dead letters
// of an official Go consumer that kept failing are listed; one is resent
// from the page and comes back to the consumer while the DLQ keeps it; a
// test message sent from the topic page's form reaches the consumer with
// the id the page shows, and one the broker refuses shows why; the clients
// page lists the remoting consumer and a v5 SDK SimpleConsumer with its
// messages in flight. Screenshots docs/console-dlq.png and
// docs/console-clients.png (WHEELMQ_CONSOLE_SHOTS).
func TestConsoleDeadLettersInBrowser(t *testing.T) {
	t.Parallel() // its own broker (and tab): overlaps with the package's other parallel tests
	b := newBrowser(t)
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) {
		c.Console = true
		c.GRPC.Listen = "127.0.0.1:0"
	}})
	base := "http://" + n.MetricsAddr()
	ctx := context.Background()
	topic, group := "orders", "billing"
	processtest.CreateTopic(t, n, topic, 1)
	var heal atomic.Bool
	rec := failingConsumer(t, n, group, topic, &heal)
	p := processtest.Producer(t, n.NamesrvAddr())
	for _, k := range []string{"order-1041", "order-1042", "order-1043"} {
		m := primitive.NewMessage(topic, []byte(`{"order":"`+k+`","amount":42.5}`))
		m.WithKeys([]string{k})
		m.WithTag("created")
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	waitDeadLetters(t, process.ConsoleOf(n), group, 3)
	heal.Store(true)

	// The DLQ list, then its messages; the newest one resent to the retry topic.
	b.must(chromedp.Navigate(base+"/deadletters"), chromedp.WaitVisible(chromedp.CSS("#dlqs")))
	if count := get(b, chromedp.Text(chromedp.CSS("#dlqs td.count"))); count != "3" {
		t.Fatalf("DLQ count on the page %q, want 3", count)
	}
	// (The list is live: its link is followed by address, not clicked, as
	// a refresh may replace it under the click.)
	href := get(b, chromedp.Evaluate[string](`document.querySelector("#dlqs a").href`))
	b.must(chromedp.Navigate(href))
	if err := b.do(10*time.Second, chromedp.WaitVisible(chromedp.CSS("#dead-letters"))); err != nil {
		t.Fatalf("%v: %s\n%s", err, get(b, chromedp.Location()), get(b, chromedp.Evaluate[string](`document.body.innerHTML`)))
	}
	if rows := get(b, chromedp.Evaluate[int](`document.querySelectorAll("#dead-letters tbody tr").length`)); rows != 3 {
		t.Fatalf("%d dead letters on the page, want 3", rows)
	}
	before := rec.Len()
	key := get(b, chromedp.Text(chromedp.CSS(`#dead-letters tbody tr:first-child td:nth-child(4)`)))
	b.must(chromedp.Click(chromedp.CSS(`#dead-letters tbody tr:first-child button[value=retry]`)))
	if err := b.do(10*time.Second, chromedp.WaitVisible(chromedp.CSS("#flash"))); err != nil {
		t.Fatalf("%v: %s\n%s", err, get(b, chromedp.Location()), get(b, chromedp.Evaluate[string](`document.body.innerText`)))
	}
	if flash := get(b, chromedp.Text(chromedp.CSS("#flash"))); !strings.Contains(flash, "resent to "+meta.RetryTopic(group)) {
		t.Fatalf("resend flash %q", flash)
	}
	if !rec.WaitUntil(func(ms []*primitive.MessageExt) bool { return len(ms) > before }, 20*time.Second) {
		t.Fatal("the resent message did not come back to the consumer")
	}
	if m := rec.Snapshot()[before]; m.Topic != topic || !strings.Contains(string(m.Body), key) || key == "" || m.ReconsumeTimes != 0 {
		t.Fatalf("resent message (keys %q) received: %s %q reconsume %d", key, m.Topic, m.Body, m.ReconsumeTimes)
	}
	rows := get(b, chromedp.Evaluate[int](`document.querySelectorAll("#dead-letters tbody tr").length`))
	resent := get(b, chromedp.Text(chromedp.CSS(`#dead-letters tbody tr:first-child td.resent`)))
	if rows != 3 || resent != "1×" || get(b, chromedp.Evaluate[int](`document.querySelectorAll("#resends tbody tr").length`)) != 1 {
		t.Fatalf("after the resend: %d rows (want 3: the DLQ keeps it), resent %q, resends listed", rows, resent)
	}
	shot(t, b, "console-dlq", 1200, 760)

	// The test-send form: a message, then one the broker refuses.
	before = rec.Len()
	testSend := func(body, deliverAt string) string {
		b.must(chromedp.Navigate(base+"/topic?name="+topic), chromedp.WaitReady(chromedp.CSS("#test-send")))
		get(b, chromedp.Evaluate[bool](`document.getElementById("test-send").open = true`))
		b.must(chromedp.SetValue(chromedp.CSS(`#test-send textarea[name=body]`), body),
			chromedp.SetValue(chromedp.CSS(`#test-send input[name=tags]`), "console"),
			chromedp.SetValue(chromedp.CSS(`#test-send input[name=keys]`), "test-1"),
			chromedp.SetValue(chromedp.CSS(`#test-send input[name=deliverAt]`), deliverAt),
			chromedp.Submit(chromedp.CSS(`#test-send form`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
		return get(b, chromedp.Text(chromedp.CSS("#flash")))
	}
	flash := testSend("hello from the console", "")
	i := strings.Index(flash, "msgId ")
	if !strings.HasPrefix(flash, "sent:") || i < 0 {
		t.Fatalf("test send flash %q", flash)
	}
	id := strings.TrimSuffix(strings.Fields(flash[i+len("msgId "):])[0], ",")
	if !rec.WaitUntil(func(ms []*primitive.MessageExt) bool { return len(ms) > before }, 20*time.Second) {
		t.Fatal("the test message did not arrive")
	}
	if m := rec.Snapshot()[before]; m.MsgId != id || string(m.Body) != "hello from the console" || m.GetTags() != "console" || m.GetKeys() != "test-1" {
		t.Fatalf("test message received: id %s (page %s) %q tags %q keys %q", m.MsgId, id, m.Body, m.GetTags(), m.GetKeys())
	}
	if flash := testSend("too late", "2099-01-01T00:00"); !strings.HasPrefix(flash, "failed:") || !strings.Contains(strings.ToLower(flash), "delay") {
		t.Fatalf("a delivery time past the longest delay: flash %q", flash)
	}

	// Clients of both protocols, a SimpleConsumer's messages in flight.
	vp, vc := v5SimpleConsumer(t, n, "billing-v5", topic)
	for i := range 4 {
		if _, err := vp.Send(ctx, &rmq.Message{Topic: topic, Body: []byte("v5 " + string(rune('a'+i)))}); err != nil {
			t.Fatalf("v5 send: %v", err)
		}
	}
	var got int
	for deadline := time.Now().Add(15 * time.Second); got < 2 && time.Now().Before(deadline); {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ms, _ := vc.Receive(rctx, 2, time.Minute)
		cancel()
		got += len(ms)
	}
	if got < 2 {
		t.Fatalf("the SimpleConsumer received %d", got)
	}
	b.must(chromedp.Navigate(base+"/clients"), chromedp.WaitVisible(chromedp.CSS("#clients")))
	inflight := get(b, chromedp.Text(chromedp.CSS(`#group-lags tr[data-group="billing-v5"][data-topic="orders"] td.inflight`)))
	if inflight != strconv.Itoa(got) {
		t.Fatalf("in flight on the page %q, received %d", inflight, got)
	}
	for _, proto := range []string{"grpc", "remoting"} {
		if get(b, chromedp.Evaluate[int](`document.querySelectorAll('#clients tr[data-protocol="`+proto+`"]').length`)) == 0 {
			t.Fatalf("no %s client on the clients page", proto)
		}
	}
	shot(t, b, "console-clients", 1200, 700)
	if e := b.errors(); len(e) > 0 {
		t.Fatalf("JS errors: %v", e)
	}
}

// shot saves the page at w x h into WHEELMQ_CONSOLE_SHOTS (for docs/),
// when set.
func shot(t *testing.T, b *browser, name string, w, h int64) {
	t.Helper()
	out := os.Getenv("WHEELMQ_CONSOLE_SHOTS")
	if out == "" {
		return
	}
	b.must(chromedp.EmulateViewport(w, h))
	png := get(b, chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(out, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
