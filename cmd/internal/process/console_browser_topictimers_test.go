package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/chromedp/chromedp"

	"github.com/wheelmq/wheelmq/cmd/internal/console"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestConsoleTopicTimersInBrowser: a topic's page lists its pending timers
// (sent by the official Go client) with their due times, keys and tags; the
// Cancel button of one row cancels that timer, which is then gone from the
// list and the counts; the topics list shows the count. The screenshot goes
// to WHEELMQ_CONSOLE_SHOTS/console-topic-timers.png when set.
func TestConsoleTopicTimersInBrowser(t *testing.T) {
	t.Parallel() // its own broker (and tab): overlaps with the package's other parallel tests
	b := newBrowser(t)
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	base := "http://" + n.MetricsAddr()
	topic, other := "orders-later", processtest.Unique("other")
	processtest.CreateTopic(t, n, topic, 2)
	processtest.CreateTopic(t, n, other, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf(`{"order":%d}`, 1000+i)))
		m.WithDelayTimestamp(time.Now().Add(3*time.Hour + 2*time.Minute + time.Duration(i)*47*time.Minute + 30*time.Second))
		m.WithTag("reminder")
		m.WithKeys([]string{fmt.Sprint("order-", 1000+i)})
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MsgID)
	}
	m := primitive.NewMessage(other, []byte("elsewhere"))
	m.WithDelayTimestamp(time.Now().Add(time.Hour))
	if _, err := p.SendSync(ctx, m); err != nil {
		t.Fatal(err)
	}
	cb := process.ConsoleOf(n)
	count := func() int64 {
		c, err := cb.TimerCounts(ctx, console.Credentials{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Topics[topic]
	}
	waitUntil(t, 10*time.Second, func() bool { return count() == 4 })

	rows := func() []string {
		return get(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#timers tr.timer")).map(r => r.dataset.id)`))
	}
	b.must(chromedp.Navigate(base+"/topic?name="+topic), chromedp.WaitVisible(chromedp.CSS("#timers")))
	if got := rows(); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("listed %v, want %v (in due order)", got, ids)
	}
	first := get(b, chromedp.Text(chromedp.CSS("#timers tr.timer")))
	for _, want := range []string{"in 3h 2m", "order-1000", "reminder", "14 B"} {
		if !strings.Contains(first, want) {
			t.Fatalf("first row %q lacks %q", first, want)
		}
	}
	if c := get(b, chromedp.Text(chromedp.CSS("#timer-count"))); !strings.HasPrefix(c, "4 pending") {
		t.Fatalf("count line %q", c)
	}
	if os.Getenv("WHEELMQ_CONSOLE_SHOTS") != "" {
		b.must(chromedp.EmulateViewport(1000, 640), chromedp.Navigate(base+"/topic?name="+topic),
			chromedp.WaitVisible(chromedp.CSS("#timers")), chromedp.ScrollIntoView(chromedp.CSS("#topic-timers")))
		png := get(b, chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(os.Getenv("WHEELMQ_CONSOLE_SHOTS"), "console-topic-timers.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Cancel the second timer with its row's button.
	b.must(chromedp.Click(chromedp.CSS(`#timers tr.timer[data-id="`+ids[1]+`"] button`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if flash := get(b, chromedp.Text(chromedp.CSS("#flash"))); !strings.Contains(flash, "cancelled") {
		t.Fatalf("cancel flash %q", flash)
	}
	waitUntil(t, 10*time.Second, func() bool { return count() == 3 })
	b.must(chromedp.Navigate(base+"/topic?name="+topic), chromedp.WaitVisible(chromedp.CSS("#timers")))
	if got, want := rows(), []string{ids[0], ids[2], ids[3]}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after the cancel: listed %v, want %v", got, want)
	}
	b.must(chromedp.Navigate(base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#topics")))
	cell := get(b, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#topics tbody tr")).filter(r => r.cells[0].textContent.startsWith("`+topic+`")).map(r => r.querySelector("td.timers").textContent).join()`))
	if cell != "3" {
		t.Fatalf("topics list: %q pending timers for %s, want 3", cell, topic)
	}
	if e := b.errors(); len(e) > 0 {
		t.Fatalf("JS errors: %v", e)
	}
}
