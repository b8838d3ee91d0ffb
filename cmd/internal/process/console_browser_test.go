package process_test

// Browser tests of the web console: headless Chromium (Debian's chromium,
// installed by .ci/run) driven over CDP by chromedp, against a real broker
// process with the official Go client on the other side. Skipped, with a
// log line, when no Chromium binary is found.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/chromedp/chromedp"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// chromiumPath finds a Chromium binary ("" if none).
func chromiumPath() string {
	if p := os.Getenv("WHEELMQ_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// browser is one tab of the package's headless Chromium (shared.root)
// that collects JS errors.
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string // guarded by mu
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("console browser tests skipped: no chromium binary found (apt-get install chromium, or set WHEELMQ_CHROMIUM)")
	}
	ctx, cancel := newTab(t, path)
	b := &browser{t: t, ctx: ctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.errs = append(b.errs, string(m.Type)+": "+m.Text+" "+m.URL)
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// do runs actions with a deadline.
func (b *browser) do(d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

func (b *browser) must(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := b.do(20*time.Second, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// get runs one action that returns a value, with a deadline.
func get[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// errors returns and forgets the JS errors seen.
func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.errs
	b.errs = nil
	return e
}

// shot saves a screenshot of the page into dir.
func (b *browser) shot(dir, name string) {
	b.t.Helper()
	png := get(b, chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// scrapeValue reads one unlabelled series from /metrics.
func scrapeValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestConsoleInBrowser drives the console in headless Chromium: every page
// loads without a JS error (a live refresh included), the timer numbers on
// the page are /metrics', a topic created in the console takes sends and
// deliveries of the official Go client, a timer cancelled in the console
// is not delivered while its twin is, and a GET of a change path changes
// nothing. Screenshots go to t.TempDir() (and to WHEELMQ_CONSOLE_SHOTS
// when set, which is how docs/console-*.png were made).
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel() // its own broker; waits more than it computes: overlaps with the package's other parallel tests
	b := newBrowser(t)
	n := processtest.Start(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	base := "http://" + n.MetricsAddr()
	shots := t.TempDir()
	p := processtest.Producer(t, n.NamesrvAddr())
	ctx := context.Background()

	// Timers pending far ahead, so the numbers hold still during the test.
	processtest.CreateTopic(t, n, "console-timers", 1)
	for i := range 20 {
		m := primitive.NewMessage("console-timers", []byte("later "+strconv.Itoa(i)))
		m.WithDelayTimestamp(time.Now().Add(time.Duration(i+1)*3*time.Hour + 30*time.Minute))
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 10*time.Second, func() bool { return scrapeValue(t, n.MetricsAddr(), "wheelmq_timer_pending") == 20 })

	for _, pg := range []string{"/", "/stages", "/topics", "/topic?name=console-timers", "/groups", "/messages",
		"/timers", "/timers?range=day", "/cluster"} {
		b.must(chromedp.Navigate(base+pg), chromedp.WaitVisible(chromedp.CSS("main h1")))
		title := get(b, chromedp.Title())
		if !strings.HasSuffix(title, "wheelmq") {
			t.Fatalf("%s: title %q", pg, title)
		}
		if errText := get(b, chromedp.Evaluate[string](`(document.getElementById("error")||{}).textContent||""`)); errText != "" {
			t.Fatalf("%s shows an error: %s", pg, errText)
		}
		b.shot(shots, strings.NewReplacer("/", "_", "?", "_", "=", "_").Replace(pg))
	}
	// A live refresh (every 2 s) on the timer page, then its numbers.
	b.must(chromedp.Navigate(base+"/timers?range=day"), chromedp.WaitVisible(chromedp.CSS("#pending")),
		chromedp.WaitReady(chromedp.CSS("[data-live][data-refreshed]")))
	pending := get(b, chromedp.AttributeValue(chromedp.CSS("#pending"), "data-value")).Value
	inDay := get(b, chromedp.AttributeValue(chromedp.CSS("#in-range"), "data-value")).Value
	if want := scrapeValue(t, n.MetricsAddr(), "wheelmq_timer_pending"); pending != fmt.Sprint(want) {
		t.Fatalf("page says %s pending, /metrics %v", pending, want)
	}
	if inDay != "7" { // 3.5 h, 6.5 h, ... 21.5 h
		t.Fatalf("due within a day: page says %s, want 7", inDay)
	}
	saveShots(t, b, shots)
	if e := b.errors(); len(e) > 0 {
		t.Fatalf("JS errors: %v", e)
	}

	// A GET of a change path changes nothing.
	b.must(chromedp.Navigate(base + "/topics/create?name=by-get"))
	resp := processtest.Invoke(t, n.BrokerAddr(), topicConfigReq())
	if strings.Contains(string(resp.Body), "by-get") {
		t.Fatalf("a GET created a topic")
	}
	b.errors() // the 405 of that GET is the point

	// A topic created in the console, used by the official client.
	b.must(chromedp.Navigate(base+"/topics"), chromedp.WaitReady(chromedp.CSS("#create-topic")))
	get(b, chromedp.Evaluate[bool](`document.querySelector("details.admin").open = true`))
	b.must(chromedp.SetValue(chromedp.CSS(`#create-topic input[name=name]`), "made-in-console"),
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name=queues]`), "2"),
		chromedp.Submit(chromedp.CSS(`#create-topic`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	flash := get(b, chromedp.Text(chromedp.CSS("#flash")))
	if !strings.Contains(flash, "created") {
		t.Fatalf("create flash %q", flash)
	}
	processtest.WaitRoute(t, n.NamesrvAddr(), "made-in-console")
	_, got := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), "made-in-console", "*")
	if _, err := p.SendSync(ctx, primitive.NewMessage("made-in-console", []byte("hello console"))); err != nil {
		t.Fatalf("send to the console's topic: %v", err)
	}
	if !got.WaitFor(1, 20*time.Second) {
		t.Fatalf("the console's topic delivered nothing")
	}
	// The topic page links its queues' last messages; one is ours.
	b.must(chromedp.Navigate(base+"/topic?name=made-in-console"), chromedp.WaitVisible(chromedp.CSS("#queues")),
		chromedp.Click(chromedp.CSS(`#queues a`)), chromedp.WaitVisible(chromedp.CSS("#found")))
	if text := get(b, chromedp.Evaluate[string](`(document.querySelector("pre.body.text")||{}).textContent||document.querySelector("main").innerText`)); text != "hello console" {
		t.Fatalf("the last message by queue offset: %q", text)
	}

	// A timer cancelled in the console is not delivered; its twin is.
	processtest.CreateTopic(t, n, "console-cancel", 1)
	_, rec := processtest.PushConsumer(t, n.NamesrvAddr(), processtest.Unique("cg"), "console-cancel", "*")
	due := time.Now().Add(6 * time.Second)
	var ids []string
	for _, body := range []string{"cancel me", "keep me"} {
		m := primitive.NewMessage("console-cancel", []byte(body))
		m.WithDelayTimestamp(due)
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.OffsetMsgID)
	}
	b.must(chromedp.Navigate(base+"/timers"),
		chromedp.SetValue(chromedp.CSS(`#cancel-timer input[name=offsetMsgId]`), ids[0]),
		chromedp.Submit(chromedp.CSS(`#cancel-timer`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	flash = get(b, chromedp.Text(chromedp.CSS("#flash")))
	if !strings.Contains(flash, "cancelled") {
		t.Fatalf("cancel flash %q", flash)
	}
	if !rec.WaitFor(1, time.Until(due)+15*time.Second) {
		t.Fatalf("the twin timer was not delivered")
	}
	time.Sleep(2 * time.Second) // a late delivery of the cancelled one would come now
	for _, m := range rec.Snapshot() {
		if string(m.Body) == "cancel me" {
			t.Fatalf("the timer cancelled in the console was delivered")
		}
	}
	// The messages page tells both timers' lives (the index may lag a
	// little: the page is asked again until it tells).
	lifeOf := func(id string) string {
		b.must(chromedp.Navigate(base+"/messages?id="+id), chromedp.WaitVisible(chromedp.CSS("main h1")))
		return get(b, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("ol.life li")).map(e => e.textContent).join("\n")`))
	}
	var life string
	waitUntil(t, 10*time.Second, func() bool { life = lifeOf(ids[0]); return strings.Contains(life, "cancelled") })
	if !strings.Contains(life, "timer due") || strings.Contains(life, "written back") {
		t.Fatalf("the cancelled timer's life:\n%s", life)
	}
	waitUntil(t, 10*time.Second, func() bool { life = lifeOf(ids[1]); return strings.Contains(life, "written back") })
	if strings.Contains(life, "cancelled") || !strings.Contains(life, "consume") {
		t.Fatalf("the delivered timer's life:\n%s", life)
	}
	b.shot(shots, "message")

	// The stages table has one row per stage /metrics knows.
	b.must(chromedp.Navigate(base+"/stages"), chromedp.WaitVisible(chromedp.CSS("#stages")))
	rows := get(b, chromedp.Evaluate[int](`document.querySelectorAll("#stages tbody tr").length`))
	if want := countStages(t, n.MetricsAddr()); rows != want || want < 10 {
		t.Fatalf("stages page shows %d stages, /metrics %d", rows, want)
	}
	if e := b.errors(); len(e) > 0 {
		t.Fatalf("JS errors: %v", e)
	}
	t.Logf("screenshots in %s", shots)
}

// countStages counts the stage label values of wheelmq_stage_up.
func countStages(t *testing.T, addr string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return len(regexp.MustCompile(`(?m)^wheelmq_stage_up\{stage="[^"]+"\} `).FindAll(body, -1))
}

// saveShots copies the overview and timer screenshots to
// WHEELMQ_CONSOLE_SHOTS (for docs/), when set.
func saveShots(t *testing.T, b *browser, dir string) {
	out := os.Getenv("WHEELMQ_CONSOLE_SHOTS")
	if out == "" {
		return
	}
	_ = dir
	for name, pg := range map[string]string{"console-overview": "/", "console-timers": "/timers?range=day"} {
		b.must(chromedp.EmulateViewport(1000, 640), chromedp.Navigate(strings.TrimSuffix(b.base(), "/")+pg),
			chromedp.WaitVisible(chromedp.CSS("main h1")))
		png := get(b, chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(out, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// base is the current page's origin.
func (b *browser) base() string {
	loc := get(b, chromedp.Location())
	i := strings.Index(loc[len("http://"):], "/")
	return loc[:len("http://")+i]
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// topicConfigReq is GET_ALL_TOPIC_CONFIG.
func topicConfigReq() *remoting.Command {
	return remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil)
}
