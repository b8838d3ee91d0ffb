package process_test

// The package's one headless Chromium: the first browser test starts it,
// every browser test gets a tab of its own in a browser context of its own
// (cookies and storage are not shared: the consoles of the tests' brokers
// all live on 127.0.0.1), and TestMain (main_test.go) stops it after the
// last test.
// Starting Chromium once instead of once per test saves a few seconds per
// test on a loaded 2-core machine.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserStartTimeout bounds starting Chromium and opening a tab in it.
const browserStartTimeout = 60 * time.Second

// sharedChromium is the package's Chromium, started on first use.
type sharedChromium struct {
	mu      sync.Mutex
	ctx     context.Context // the browser's first tab; done when the browser is gone
	cancel  func()          // stops the browser
	started string          // the binary it runs
}

var shared sharedChromium

// root returns a context of the running browser, starting Chromium at path
// first when none runs (or the last one's context ended).
func (s *sharedChromium) root(path string) (context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil && s.ctx.Err() == nil && s.started == path {
		return s.ctx, nil
	}
	if s.cancel != nil {
		s.cancel()
		s.ctx, s.cancel = nil, nil
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1200, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	stop := func() { cancel(); acancel() }
	// The first run starts the browser and binds its life to its context,
	// so it gets none with a deadline: the deadline is kept here instead.
	if err := runBounded(ctx, stop, chromedp.Navigate("about:blank")); err != nil {
		return nil, fmt.Errorf("start chromium %s: %w", path, err)
	}
	s.ctx, s.cancel, s.started = ctx, stop, path
	return ctx, nil
}

// stop stops the browser, if one runs.
func (s *sharedChromium) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
		s.ctx, s.cancel = nil, nil
	}
}

// runBounded runs the first actions of a chromedp context (which starts its
// browser or opens its tab, and must not carry a deadline) within
// browserStartTimeout; past it, it calls stop, which cancels the context
// and so ends the run.
func runBounded(ctx context.Context, stop func(), actions ...chromedp.Action[chromedp.Void]) error {
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Do(ctx, actions...) }()
	select {
	case err := <-errc:
		if err != nil {
			stop()
		}
		return err
	case <-time.After(browserStartTimeout):
		stop()
		<-errc // the cancelled context ends the run
		return fmt.Errorf("not ready within %s", browserStartTimeout)
	}
}

// newTab opens a tab of the shared browser in a browser context of its
// own; the tab closes when the test ends.
func newTab(t *testing.T, path string) (context.Context, func()) {
	t.Helper()
	root, err := shared.root(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	if err := runBounded(ctx, cancel, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("open a tab in chromium %s: %v", path, err)
	}
	return ctx, cancel
}
