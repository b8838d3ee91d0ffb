package process_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
)

// clientSide are the metrics rocketmq-exporter asks each consumer process
// for (GET_CONSUMER_RUNNING_INFO: its consume RT and TPS, pull RT and TPS,
// failed messages): the client's own measurements, which a broker does not
// have. docs/operations.md names them as not served.
var clientSide = map[string]bool{
	"rocketmq_client_consume_fail_msg_count": true, "rocketmq_client_consume_fail_msg_tps": true,
	"rocketmq_client_consume_ok_msg_tps": true, "rocketmq_client_consume_rt": true,
	"rocketmq_client_consumer_pull_rt": true, "rocketmq_client_consumer_pull_tps": true,
}

// queryMetrics reads the metric names the PromQL expressions of a
// testdata file reference (one expression a line, # comments).
func queryMetrics(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "grafana", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, n := range regexp.MustCompile(`rocketmq_[a-z0-9_]+`).FindAllString(line, -1) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestRocketMQMetricNames runs traffic on a live broker (sends, a delayed
// message, a consumer group that consumes and commits) and finds on
// /metrics a series of every metric Grafana dashboard 10477 queries
// (testdata/grafana/10477.promql, from rocketmq-exporter's
// rocketmq_exporter_overview.json) and of RocketMQ 5's broker names
// (testdata/grafana/rocketmq.promql), the client-side series excepted,
// with the labels those queries group by.
func TestRocketMQMetricNames(t *testing.T) {
	t.Parallel()
	n := processtest.Start(t, processtest.Options{Metrics: true})
	topic, group := processtest.Unique("rmqnames"), processtest.Unique("rmqnamescg")
	processtest.CreateTopic(t, n, topic, 2)
	p := processtest.Producer(t, n.NamesrvAddr())
	for i := range 5 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", i)))
		if i == 0 {
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
	processtest.WaitCommitted(t, n.BrokerAddr(), group, topic, 2, 20*time.Second)
	// The group series are rebuilt at most every 5 s: wait for a build
	// that saw the commits.
	var page string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		page = metricsPage(t, n.MetricsAddr())
		if v, _ := sampleSum(page, "rocketmq_consumer_offset", `group="`+group+`"`, `topic="`+topic+`"`); v == 5 || time.Now().After(deadline) {
			break
		}
	}

	for _, file := range []string{"10477.promql", "rocketmq.promql"} {
		names := queryMetrics(t, file)
		if len(names) < 10 {
			t.Fatalf("%s: only %d metric names", file, len(names))
		}
		for _, name := range names {
			if clientSide[name] {
				if _, found := sampleSum(page, name); found {
					t.Errorf("%s: %s is served, yet listed as client-side", file, name)
				}
				continue
			}
			if _, found := sampleSum(page, name); !found {
				t.Errorf("%s: no series of %s on /metrics", file, name)
			}
		}
	}
	// The labels the dashboards filter and group by, with this broker's
	// values.
	for name, labels := range map[string][]string{
		"rocketmq_producer_tps":         {`cluster="`, `broker="broker-a"`, `topic="` + topic + `"`},
		"rocketmq_consumer_tps":         {`group="` + group + `"`, `topic="` + topic + `"`},
		"rocketmq_group_diff":           {`group="` + group + `"`, `topic="` + topic + `"`, `msgModel="CLUSTERING"`, `countOfOnlineConsumers="1"`},
		"rocketmq_message_accumulation": {`group="` + group + `"`, `topic="` + topic + `"`},
		"rocketmq_messages_in_total":    {`node_type="broker"`, `node_id="broker-a"`, `topic="` + topic + `"`, `message_type="Normal"`, `is_system="false"`},
		"rocketmq_messages_out_total":   {`consumer_group="` + group + `"`, `is_retry="false"`},
		"rocketmq_broker_tps":           {`brokerIP="` + n.BrokerAddr() + `"`},
	} {
		if _, found := sampleSum(page, name, labels...); !found {
			t.Errorf("no %s series with labels %v", name, labels)
		}
	}
	if v, _ := sampleSum(page, "rocketmq_consumer_offset", `group="`+group+`"`, `topic="`+topic+`"`); v != 5 {
		t.Errorf("rocketmq_consumer_offset of the group = %v, want 5 (every message consumed and committed)", v)
	}
	if v, _ := sampleSum(page, "rocketmq_group_diff", `group="`+group+`"`, `topic="`+topic+`"`); v != 0 {
		t.Errorf("rocketmq_group_diff = %v, want 0", v)
	}
	if v, _ := sampleSum(page, "rocketmq_brokeruntime_msg_put_total_today_now"); v != 5 {
		t.Errorf("rocketmq_brokeruntime_msg_put_total_today_now = %v, want 5 client sends", v)
	}
}
