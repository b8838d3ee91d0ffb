package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/chromedp/chromedp"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/auth"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// TestConsoleAccessInBrowser drives the Access and Configuration pages in
// headless Chromium on a broker with access control: an admin logs in,
// creates an ACL 2.0 user and gives it PUB on a topic (the official Go
// client then sends with it), sets a run-time configuration key (which
// GET_BROKER_CONFIG then answers), and the topics list marks the system
// topics. Screenshots go to WHEELMQ_CONSOLE_SHOTS when set
// (docs/console-access.png, docs/console-config.png).
func TestConsoleAccessInBrowser(t *testing.T) {
	t.Parallel() // its own broker (and tab): overlaps with the package's other parallel tests
	b := newBrowser(t)
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclFile("orders=SUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	n := processtest.Start(t, processtest.Options{Admin: aclAdmin, Metrics: true, MutateNode: func(c *process.Config) {
		c.ACL = process.ACLConfig{File: path, Interval: 100 * time.Millisecond}
		c.Console = true
	}})
	base := "http://" + n.MetricsAddr()
	if r := createTopicAs(t, n, aclAdmin, "orders", 2); r.Code != remoting.Success {
		t.Fatalf("create orders: %d %s", r.Code, r.Remark)
	}
	shots := os.Getenv("WHEELMQ_CONSOLE_SHOTS")
	b.must(chromedp.EmulateViewport(1100, 760))

	b.must(chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SetValue(chromedp.CSS(`input[name=accessKey]`), aclAdmin.AccessKey),
		chromedp.SetValue(chromedp.CSS(`input[name=secret]`), aclAdmin.SecretKey),
		// The login page has a "main h1" too: wait for the page after it.
		chromedp.Click(chromedp.CSS("#login")), chromedp.WaitNotPresent(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("main h1")))

	// A user and its permission, made on the Access page.
	app := auth.Credentials{AccessKey: "shop-app", SecretKey: "shop-app-secret"}
	flash := func() string { return get(b, chromedp.Text(chromedp.CSS("#flash"))) }
	b.must(chromedp.Navigate(base+"/access"), chromedp.WaitVisible(chromedp.CSS("#create-user")),
		chromedp.SetValue(chromedp.CSS(`#create-user input[name=name]`), app.AccessKey),
		chromedp.SetValue(chromedp.CSS(`#create-user input[name=secret]`), app.SecretKey),
		chromedp.Submit(chromedp.CSS("#create-user")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if f := flash(); !strings.Contains(f, "created") {
		t.Fatalf("create user: %q", f)
	}
	b.must(chromedp.SetValue(chromedp.CSS(`#put-policy select[name=user]`), app.AccessKey),
		chromedp.SetValue(chromedp.CSS(`#put-policy input[name=resource]`), "Topic:orders"),
		chromedp.Click(chromedp.CSS(`#put-policy input[value=Pub]`)),
		chromedp.Submit(chromedp.CSS("#put-policy")), chromedp.WaitVisible(chromedp.CSS(`#users [data-resource="Topic:orders"]`)))
	if f := flash(); !strings.Contains(f, "set") {
		t.Fatalf("put policy: %q", f)
	}
	if html := get(b, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(html, app.SecretKey) ||
		strings.Contains(html, aclAlice.SecretKey) || !strings.Contains(html, "alice-app") {
		t.Fatal("the Access page shows a secret, or not the file's accounts")
	}
	if shots != "" {
		b.shot(shots, "console-access")
	}
	p := processtest.Producer(t, n.NamesrvAddr(), producer.WithCredentials(goCreds(app)), producer.WithRetry(0))
	if _, err := p.SendSync(context.Background(), primitive.NewMessage("orders", []byte("from a console-made account"))); err != nil {
		t.Fatalf("send as the console-made account: %v", err)
	}

	// A run-time key set on the Configuration page.
	row := `#changeable tr[data-key="transactionCheckMax"] `
	b.must(chromedp.Navigate(base+"/config"), chromedp.WaitVisible(chromedp.CSS(row+"form")),
		chromedp.SetValue(chromedp.CSS(row+`input[name=value]`), "7"),
		chromedp.Submit(chromedp.CSS(row+"form")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if f := flash(); !strings.Contains(f, "transactionCheckMax set to 7") {
		t.Fatalf("config flash %q", f)
	}
	if cfg, _ := brokerConfigOf(t, n.BrokerAddr(), aclAdmin); cfg["transactionCheckMax"] != "7" {
		t.Fatalf("GET_BROKER_CONFIG has transactionCheckMax=%s after the console set 7", cfg["transactionCheckMax"])
	}
	if v := get(b, chromedp.Value(chromedp.CSS(row+`input[name=value]`))); v != "7" {
		t.Fatalf("the page shows transactionCheckMax %q", v)
	}
	if fixed := get(b, chromedp.Evaluate[int](`document.querySelectorAll("#fixed form").length`)); fixed != 0 {
		t.Fatalf("%d fixed keys have a form", fixed)
	}
	if shots != "" {
		b.shot(shots, "console-config")
	}

	// System topics are marked on the topics list.
	b.must(chromedp.Navigate(base+"/topics?q=TBW102"), chromedp.WaitVisible(chromedp.CSS("#topics")))
	if label := get(b, chromedp.Evaluate[string](`(document.querySelector("#topics small.system")||{}).textContent||""`)); label != "system" {
		t.Fatalf("TBW102 is labelled %q", label)
	}
	if e := b.errors(); len(e) > 0 {
		t.Fatalf("JS errors: %v", e)
	}
}
