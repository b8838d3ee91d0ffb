package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/role"
	"github.com/wheelmq/wheelmq/cmd/internal/process/processtest"
	"github.com/wheelmq/wheelmq/cmd/wheelctl/internal/scrape"
	"github.com/wheelmq/wheelmq/netloop/remoting"
	"github.com/wheelmq/wheelmq/storage"
)

// dashboardPath is the Grafana dashboard shipped in docs/.
const dashboardPath = "../../docs/grafana/wheelmq.json"

// metricRe finds metric names in PromQL (the dashboard only queries the
// broker's own families and the Go/process collectors).
var metricRe = regexp.MustCompile(`\b(?:wheelmq|process|go)_[a-zA-Z0-9_]+`)

// dashboardMetrics returns every metric name the dashboard's queries use.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboardPath, err)
	}
	if d.UID == "" {
		t.Error("dashboard has no uid")
	}
	seen := map[string]bool{}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		if ids[p.ID] || p.Title == "" {
			t.Errorf("panel %d %q: duplicate id or no title", p.ID, p.Title)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			for _, m := range metricRe.FindAllString(tg.Expr, -1) {
				seen[m] = true
			}
		}
	}
	for _, v := range d.Templating.List {
		for _, m := range metricRe.FindAllString(v.Definition, -1) {
			seen[m] = true
		}
	}
	if queries < 20 {
		t.Errorf("only %d queries", queries)
	}
	var names []string
	for m := range seen {
		names = append(names, m)
	}
	sort.Strings(names)
	return names
}

// TestDashboardMetricsExist checks that every metric the Grafana dashboard
// queries is on a live broker's /metrics.
func TestDashboardMetricsExist(t *testing.T) {
	names := dashboardMetrics(t)
	n := startNode(t, processtest.Options{Metrics: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A request the broker refuses: wheelmq_requests_refused_total has
	// series from the first refusal on.
	if resp := processtest.Invoke(t, n.BrokerAddr(), remoting.NewRequest(9999, nil, nil)); resp.Code != remoting.RequestCodeNotSupported {
		t.Fatalf("request code 9999: answered %d %q, want REQUEST_CODE_NOT_SUPPORTED", resp.Code, resp.Remark)
	}
	snap, err := scrape.Fetch(ctx, &http.Client{}, "http://"+n.MetricsAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	// The wheelmq_ha_* families exist in controller mode only: they are
	// looked up on a broker of a replicated group (master, its stream faked).
	ha := startNode(t, processtest.Options{Metrics: true, Mutate: haMaster})
	haSnap, err := scrape.Fetch(ctx, &http.Client{}, "http://"+ha.MetricsAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok {
				if _, isHist := snap.Histogram(base); isHist {
					family = base
				}
			}
		}
		if from := snap; strings.HasPrefix(name, "wheelmq_ha_") {
			if from = haSnap; !from.Has(family) {
				t.Errorf("the dashboard queries %s, which a broker in controller mode does not export", name)
			}
		} else if !from.Has(family) {
			t.Errorf("the dashboard queries %s, which the broker does not export", name)
		}
	}
	// Every wheelmq metric the broker exports is documented in
	// docs/operations.md (with what to alert on).
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(snap.Names(), haSnap.Names()...) {
		if strings.HasPrefix(name, "wheelmq_") && !strings.Contains(string(ops), "`"+name) {
			t.Errorf("%s is not documented in docs/operations.md", name)
		}
	}
	for _, must := range []string{"wheelmq_actor_messages_total", "wheelmq_timer_lateness_seconds_bucket",
		"wheelmq_store_dispatch_lag_bytes", "wheelmq_requests_total", "wheelmq_stage_up",
		"wheelmq_timer_due_next_minute", "wheelmq_timer_skipped_total", "wheelmq_timer_duplicates_total",
		"wheelmq_store_flush_seconds_bucket", "wheelmq_store_commitlog_segments", "wheelmq_store_recovery_truncated_bytes",
		"wheelmq_net_connections", "wheelmq_net_connections_accepted_total", "wheelmq_net_bytes_in_total",
		"wheelmq_net_bytes_out_total", "wheelmq_net_bad_frames_total", "wheelmq_net_frames_in_total",
		"wheelmq_ha_role", "wheelmq_ha_fenced", "wheelmq_ha_epoch", "wheelmq_ha_confirmed_offset",
		"wheelmq_ha_replica_lag_bytes", "wheelmq_ha_sync_state_set_size"} {
		if !strings.Contains(strings.Join(names, " "), must) {
			t.Errorf("the dashboard does not query %s", must)
		}
	}
}

// haMaster puts a broker in controller mode as its group's master, with a
// replication stream that confirms at once and reports one replica, so that
// every wheelmq_ha_* family has a series.
func haMaster(c *pipeline.Config) {
	c.Replication, c.HAListen = pipeline.ReplicationController, "127.0.0.1:0"
	c.Role = role.NewHolder(role.State{Kind: role.Master, BrokerID: 0, ReplicaID: 1, Epoch: 1, SyncStateSet: []int64{1, 2}})
	c.StartReplication = func(env pipeline.ReplicationEnv) (*pipeline.Replication, error) {
		return &pipeline.Replication{Confirmer: confirmAll{}, Durable: logEnd{env.Store},
			Replicas: func() []pipeline.ReplicaLag { return []pipeline.ReplicaLag{{ReplicaID: 2, LagBytes: 1}} }}, nil
	}
}

// confirmAll confirms every batch at once; logEnd confirms the whole log.
type confirmAll struct{}

func (confirmAll) WaitConfirmed(_ int64, done func(bool)) { done(true) }

type logEnd struct{ st *storage.Store }

func (l logEnd) DurableEnd() int64 { return l.st.CommitLog.MaxOffset() }
