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

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// TestConsoleRatesInBrowser: the Overview's rate charts in headless
// Chromium move with the official Go client's traffic (sends in bursts,
// some delayed by a second, a push consumer), without a JS error. The
// sampler reads every 25 ms here, so its window (360 intervals) is 9 s.
// The screenshot goes to t.TempDir(), and to WHEELMQ_CONSOLE_SHOTS as
// console-rates.png when set (docs/console-rates.png).
func TestConsoleRatesInBrowser(t *testing.T) {
	t.Parallel() // its own broker (and tab): overlaps with the package's other parallel tests
	b := newBrowser(t)
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) {
		c.Console, c.ConsoleRatesEvery = true, 25*time.Millisecond
	}})
	base := "http://" + n.MetricsAddr()
	topic := processtest.Unique("browser-rates")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	_, recv := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), topic, "*")
	ctx := context.Background()
	// Three phases of 1.2 s at three paces, so that the chart has a shape.
	sent := 0
	for phase, pause := range []time.Duration{4 * time.Millisecond, 0, 10 * time.Millisecond} {
		for end := time.Now().Add(1200 * time.Millisecond); time.Now().Before(end); {
			m := primitive.NewMessage(topic, []byte(fmt.Sprintf("p%d-%d", phase, sent)))
			if sent%4 == 0 {
				m.WithDelayTimeLevel(1) // 1 s
			}
			if _, err := p.SendSync(ctx, m); err != nil {
				t.Fatal(err)
			}
			sent++
			time.Sleep(pause) // the pace, not a wait for anything
		}
	}
	if !recv.WaitFor(sent, 20*time.Second) {
		t.Fatalf("consumer got %d of %d", recv.Len(), sent)
	}
	b.must(chromedp.EmulateViewport(1100, 1000), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#chart-in polyline")))
	moved := func(series string) bool {
		vals := get(b, chromedp.AttributeValue(chromedp.CSS(`polyline[data-series="`+series+`"]`), "data-values")).Value
		for _, v := range strings.Fields(vals) {
			if v != "0" {
				return true
			}
		}
		return false
	}
	for _, s := range []string{"msgs_in", "out_pull", "timers_fired", "timers_pending"} {
		if !moved(s) {
			t.Errorf("the %s line is flat", s)
		}
	}
	if n := get(b, chromedp.Evaluate[int](`document.querySelectorAll("#rates svg.rates").length`)); n != 4 {
		t.Fatalf("%d charts, want 4", n)
	}
	// The live refresh redraws the charts.
	b.must(chromedp.WaitReady(chromedp.CSS("[data-live][data-refreshed] #chart-in polyline")))
	if e := b.errors(); len(e) > 0 {
		t.Fatalf("JS errors: %v", e)
	}
	shots := t.TempDir()
	b.shot(shots, "console-rates")
	if out := os.Getenv("WHEELMQ_CONSOLE_SHOTS"); out != "" {
		png := get(b, chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(out, "console-rates.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
