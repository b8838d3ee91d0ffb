package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// page GETs a path of the broker's HTTP port.
func page(t *testing.T, addr, path string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestNumbersAgree sends plain and delayed messages and consumes them, then
// reads messages in and out, the role and the stages' mailbox depths from
// wheelctl stats --json, wheelctl cluster list --json, the console's
// Overview page and /metrics: each number is the same everywhere and true
// to the traffic (in: the client sends only, not the timer write-backs).
func TestNumbersAgree(t *testing.T) {
	n := startNode(t, processtest.Options{Metrics: true, MutateNode: func(c *process.Config) { c.Console = true }})
	topic, group := processtest.Unique("wheelctl_numbers"), processtest.Unique("numg")
	processtest.CreateTopic(t, n, topic, 1)
	p := processtest.Producer(t, n.NamesrvAddr())
	for i := range 5 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", i)))
		if i < 2 {
			m.WithDelayTimeLevel(1)
		}
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	_, recv := processtest.PushConsumer(t, n.NamesrvAddr(), group, topic, "*")
	if !recv.WaitFor(5, 20*time.Second) {
		t.Fatalf("consumed %d of 5", recv.Len())
	}
	url := "--metrics=http://" + n.MetricsAddr() + "/metrics"
	var js struct {
		Messages struct{ In, Out float64 }
		Stages   map[string]struct {
			Depth float64 `json:"mailbox_depth"`
		}
		Timer struct {
			Pending float64
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := json.Unmarshal([]byte(mustRun(t, "stats", url, "--interval", "100ms", "--json")), &js); err != nil {
			t.Fatal(err)
		}
		if js.Messages.Out >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if js.Messages.In != 5 || js.Messages.Out != 5 {
		t.Errorf("stats --json: messages in %v out %v, want 5 and 5", js.Messages.In, js.Messages.Out)
	}
	for name, s := range js.Stages {
		if s.Depth < 0 {
			t.Errorf("stats --json: stage %s mailbox depth %v", name, s.Depth)
		}
	}
	top := mustRun(t, "top", "--once", url, "--interval", "200ms", "--width", "100")
	if !regexp.MustCompile(`\bin +5\b`).MatchString(top) || !regexp.MustCompile(`\bout +5\b`).MatchString(top) {
		t.Errorf("top --once: messages in and out are not 5 and 5:\n%s", top)
	}
	metrics := page(t, n.MetricsAddr(), "/metrics")
	for name, want := range map[string]float64{"wheelmq_messages_in_total": js.Messages.In, "rocketmq_brokeruntime_msg_put_total_today_now": js.Messages.In,
		"rocketmq_brokeruntime_msg_gettotal_today_now": js.Messages.Out} {
		m := regexp.MustCompile(`(?m)^` + name + `(?:\{[^}]*\})? (\S+)$`).FindStringSubmatch(metrics)
		if m == nil {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		if v, _ := strconv.ParseFloat(m[1], 64); v != want {
			t.Errorf("/metrics %s = %v; stats says %v", name, v, want)
		}
	}
	overview := page(t, n.MetricsAddr(), "/")
	in := regexp.MustCompile(`id="in-total">([^<]*)<`).FindStringSubmatch(overview)
	out := regexp.MustCompile(`id="out-total">([^<]*)<`).FindStringSubmatch(overview)
	role := regexp.MustCompile(`id="role">([^<]*)<`).FindStringSubmatch(overview)
	if in == nil || out == nil || role == nil || in[1] != "5" || out[1] != "5" {
		t.Errorf("console Overview: in %v out %v (want 5 and 5)", in, out)
	}
	var brokers []clusterBroker
	if err := json.Unmarshal([]byte(mustRun(t, "cluster", "list", "--json", "--namesrv="+n.NamesrvAddr())), &brokers); err != nil {
		t.Fatal(err)
	}
	if len(brokers) != 1 || role == nil || brokers[0].Role != role[1] {
		t.Errorf("cluster list role %+v; console Overview role %v", brokers, role)
	}
}
