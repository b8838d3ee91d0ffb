package process_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// metricsPage fetches /metrics.
func metricsPage(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// waitMetric waits until the summed samples of sample satisfy ok.
func waitMetric(t *testing.T, addr, sample string, ok func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := scrape(t, addr, sample)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v: condition not met", sample, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOperatorMetrics checks the network, store and timer metrics an
// operator alerts on against what the test did to a real broker.
func TestOperatorMetrics(t *testing.T) {
	dir := t.TempDir()
	n := processtest.Start(t, processtest.Options{Dir: dir, Metrics: true, Mutate: func(c *pipeline.Config) {
		c.Flush = writer.FlushSync // one fsync round per group commit: the histogram fills at once
	}})
	m := n.MetricsAddr()
	page := metricsPage(t, m)
	// Pre-registered series exist before any event.
	for _, line := range []string{
		`wheelmq_timer_skipped_total{reason="no_real_topic"} 0`, `wheelmq_timer_duplicates_total{outcome="suppressed"} 0`,
		`wheelmq_net_bad_frames_total{reason="malformed",server="broker"} 0`,
		`wheelmq_net_bad_frames_total{reason="too_large",server="namesrv"} 0`,
		"wheelmq_store_recovery_truncated_bytes 0", "wheelmq_store_commitlog_segments 1", "wheelmq_timer_due_next_minute 0",
	} {
		if !strings.Contains(page, "\n"+line+"\n") {
			t.Errorf("fresh broker: /metrics lacks %q", line)
		}
	}

	topic := processtest.Unique("ops")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	send := func(m *primitive.Message) {
		t.Helper()
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	send(primitive.NewMessage(topic, []byte("plain")))
	soon := primitive.NewMessage(topic, []byte("in 50 s"))
	soon.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(time.Now().Add(50*time.Second).UnixMilli(), 10))
	send(soon)
	later := primitive.NewMessage(topic, []byte("in 10 min"))
	later.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(time.Now().Add(10*time.Minute).UnixMilli(), 10))
	send(later)

	waitMetric(t, m, `wheelmq_timer_due_next_minute`, func(v float64) bool { return v == 1 })
	waitMetric(t, m, `wheelmq_timer_pending`, func(v float64) bool { return v == 2 })
	if v := scrape(t, m, `wheelmq_store_flush_seconds_count`); v < 1 {
		t.Errorf("wheelmq_store_flush_seconds_count = %v after sync-flushed sends", v)
	}
	if v := scrape(t, m, `wheelmq_net_connections{server="broker"}`); v < 1 {
		t.Errorf("broker connections = %v with a producer connected", v)
	}
	if v := scrape(t, m, `wheelmq_net_connections{server="namesrv"}`); v < 1 {
		t.Errorf("name server connections = %v with a producer and a registered broker", v)
	}
	for _, s := range []string{`wheelmq_net_bytes_in_total{server="broker"}`, `wheelmq_net_bytes_out_total{server="broker"}`,
		`wheelmq_net_frames_in_total{server="broker"}`, `wheelmq_net_connections_accepted_total{server="broker"}`} {
		if v := scrape(t, m, s); v <= 0 {
			t.Errorf("%s = %v after sends", s, v)
		}
	}

	// A frame with a zero length: the connection is closed and counted.
	conn, err := net.DialTimeout("tcp", n.BrokerAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, m, `wheelmq_net_bad_frames_total{reason="too_short",server="broker"}`, func(v float64) bool { return v == 1 })
	if v := scrape(t, m, `wheelmq_net_bad_frames_total{reason="malformed"`); v != 0 {
		t.Errorf("malformed = %v, want 0", v)
	}

	// A torn tail after a crash: recovery cuts it and says how much.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "commitlog", "0*"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	f, err := os.OpenFile(segs[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(strings.Repeat("\xab", 64))); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	n2 := processtest.Start(t, processtest.Options{Dir: dir, Metrics: true})
	if v := scrape(t, n2.MetricsAddr(), "wheelmq_store_recovery_truncated_bytes"); v != 64 {
		t.Errorf("wheelmq_store_recovery_truncated_bytes = %v after a 64-byte torn tail", v)
	}
	if v := scrape(t, n2.MetricsAddr(), "wheelmq_timer_pending"); v != 2 {
		t.Errorf("timers pending after the restart: %v", v)
	}
}
