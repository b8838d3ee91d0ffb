package process_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage/vfs/vfstest"
)

// rawBroker is a connection to a test broker for raw sends and reads.
type rawBroker struct {
	t     *testing.T
	c     *remoting.Client
	topic string
}

// dialRaw connects to the node's broker port.
func dialRaw(t *testing.T, n *process.Node, topic string) *rawBroker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, n.BrokerAddr(), remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawBroker{t: t, c: c, topic: topic}
}

// send sends one message to queue 0 and returns the response.
func (b *rawBroker) send(body string) *remoting.Command {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := b.c.Invoke(ctx, processtest.SendRequest(b.topic, 0, []byte(body), nil))
	if err != nil {
		b.t.Fatalf("send %s: %v", body, err)
	}
	return resp
}

// mustSend sends one message and requires SUCCESS.
func (b *rawBroker) mustSend(body string) {
	b.t.Helper()
	if resp := b.send(body); resp.Code != remoting.Success {
		b.t.Fatalf("send %s: code %d %s", body, resp.Code, resp.Remark)
	}
}

// checkReadable reads queue 0 back and requires every body of want,
// undamaged (the body CRC is checked); it returns how often each appears.
func (b *rawBroker) checkReadable(want []string) map[string]int {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		recs, err := processtest.ReadQueue(ctx, b.c, b.topic, 0)
		cancel()
		if err != nil {
			b.t.Fatalf("read back: %v", err)
		}
		seen := map[string]int{}
		for _, r := range recs {
			seen[string(r.Body)]++
		}
		var missing []string
		for _, w := range want {
			if seen[w] == 0 {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return seen
		}
		if time.Now().After(deadline) { // dispatch may lag behind the writer a little
			b.t.Fatalf("%d of %d acknowledged messages not readable, e.g. %v", len(missing), len(want), missing[:min(3, len(missing))])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailedCommitLogIsReopened fails one CommitLog fsync in sync flush
// mode: the send it was for is refused, the CommitLog turns sticky-failed,
// the writer restarts and reopens it, sends succeed again, nothing
// acknowledged is lost and the broker stays healthy.
func TestFailedCommitLogIsReopened(t *testing.T) {
	fs := &vfstest.FaultFS{}
	dir := t.TempDir()
	fs.Scope(filepath.Join(dir, "commitlog"))
	n := processtest.Start(t, processtest.Options{Dir: dir, Metrics: true, Mutate: func(c *pipeline.Config) {
		c.StoreFS, c.Flush = fs, writer.FlushSync
	}})
	topic := processtest.Unique("reopen")
	processtest.CreateTopic(t, n, topic, 1)
	b := dialRaw(t, n, topic)
	var acked []string
	for i := 0; i < 5; i++ {
		acked = append(acked, fmt.Sprintf("before-%d", i))
		b.mustSend(acked[i])
	}

	fs.FailSync(1)
	resp := b.send("refused")
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "input/output error") {
		t.Fatalf("send whose fsync failed: code %d %q, want SYSTEM_ERROR with the fsync error", resp.Code, resp.Remark)
	}
	// The writer restarts within milliseconds; a send racing with it may
	// still meet the failed log, never more than a few.
	refused := 0
	for i := 0; ; i++ {
		body := fmt.Sprintf("after-%d", i)
		resp := b.send(body)
		if resp.Code == remoting.Success {
			acked = append(acked, body)
			if len(acked) == 10 {
				break
			}
			continue
		}
		if refused++; refused > 5 {
			t.Fatalf("sends still refused after the writer's restart: code %d %s", resp.Code, resp.Remark)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.checkReadable(acked)
	if code, body := healthz(t, n.MetricsAddr()); code != http.StatusOK {
		t.Fatalf("/healthz %d %q after a successful reopen", code, body)
	}
	if v := scrape(t, n.MetricsAddr(), `wheelmq_actor_restarts_total{stage="commitlog"}`); v < 1 {
		t.Errorf("commitlog restarts %v, want at least 1", v)
	}
	if err := n.Broker().Store().CommitLog.Failed(); err != nil {
		t.Fatalf("commitlog still failed: %v", err)
	}
}

// TestCommitLogReopenFailureTurnsBrokerUnhealthy keeps every CommitLog
// fsync failing, so the reopen on the writer's restart fails too: the
// writer is stopped for good, /healthz names it and the reopen, sends are
// refused at once, and what was acknowledged is still readable.
func TestCommitLogReopenFailureTurnsBrokerUnhealthy(t *testing.T) {
	fs := &vfstest.FaultFS{}
	dir := t.TempDir()
	fs.Scope(filepath.Join(dir, "commitlog"))
	n := processtest.Start(t, processtest.Options{Dir: dir, Metrics: true, Mutate: func(c *pipeline.Config) {
		c.StoreFS, c.Flush = fs, writer.FlushSync
	}})
	topic := processtest.Unique("reopenfail")
	processtest.CreateTopic(t, n, topic, 1)
	b := dialRaw(t, n, topic)
	b.mustSend("acked")
	fs.FailEverySync(true)
	if resp := b.send("refused"); resp.Code != remoting.SystemError {
		t.Fatalf("send whose fsync failed: code %d %q", resp.Code, resp.Remark)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := healthz(t, n.MetricsAddr())
		if code == http.StatusServiceUnavailable {
			if !strings.Contains(body, "commitlog") || !strings.Contains(body, "reopen") {
				t.Fatalf("/healthz body %q does not name the stage and the failed reopen", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still %d %q after the reopen failed", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp := b.send("after")
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "STAGE_DOWN") || !strings.Contains(resp.Remark, "reopen") {
		t.Fatalf("send on a broker whose writer could not reopen: code %d %q", resp.Code, resp.Remark)
	}
	b.checkReadable([]string{"acked"})
}
