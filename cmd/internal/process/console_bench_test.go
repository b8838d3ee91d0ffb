package process_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// BenchmarkConsolePages10k renders console pages of a real broker that
// holds 10,000 topics and 10,000 groups (written into its config/ before
// it starts), over HTTP on loopback: the whole path a browser's request
// takes (session, the stages' snapshots, sort, page, template).
func BenchmarkConsolePages10k(b *testing.B) {
	dir := b.TempDir()
	topics := map[string]meta.TopicConfig{}
	groups := map[string]meta.SubscriptionGroupConfig{}
	for i := range 10_000 {
		name := fmt.Sprintf("bench-topic-%05d", i)
		topics[name] = meta.TopicConfig{TopicName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}
		g := fmt.Sprintf("bench-group-%05d", i)
		groups[g] = meta.SubscriptionGroupConfig{GroupName: g, ConsumeEnable: true, RetryMaxTimes: 16, RetryQueueNums: 1}
	}
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		b.Fatal(err)
	}
	v := meta.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: 1}
	if err := meta.SaveTopics(nil, filepath.Join(dir, "config", "topics.json"), topics, v); err != nil {
		b.Fatal(err)
	}
	if err := meta.SaveSubscriptionGroups(nil, filepath.Join(dir, "config", "subscriptionGroup.json"), groups, v); err != nil {
		b.Fatal(err)
	}
	n := processtest.Start(b, processtest.Options{Dir: dir, Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	cl := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"/topics?page=100", "/topics?q=0999", "/groups?page=100", "/timers?range=year", "/stages", "/"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				resp, err := cl.Get("http://" + n.MetricsAddr() + path)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d", path, resp.StatusCode)
				}
			}
		})
	}
}
