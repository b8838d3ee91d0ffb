package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/cmd/wheelctl/internal/topview"
)

func newStatsCmd(g *globals) *cobra.Command {
	var url string
	var interval time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats [--metrics URL] [--json]",
		Short: "A broker's figures at a glance, from /metrics",
		Long: `Read the broker's /metrics twice, --interval apart, and print its figures: process, store,
stages and timers, with rates over the interval. --json prints them for machines (unknown
figures are null).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval < 100*time.Millisecond {
				return usagef("--interval %s: want at least 100ms", interval)
			}
			prev, cur, err := readTwice(cmd.Context(), url, interval, g.timeout)
			if err != nil {
				return err
			}
			v := topview.Build(prev, cur)
			if v.NotWheelmq {
				return withHint(fmt.Errorf("%s has none of wheelmq's metrics", url), "point --metrics at the broker's --metrics-listen")
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(statsJSON(v))
			}
			return printStats(g, url, v)
		},
	}
	addMetricsFlag(c, &url)
	c.Flags().DurationVar(&interval, "interval", time.Second, "time between the two readings (rates are over it)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printStats writes the figures as a two-column list.
func printStats(g *globals, url string, v topview.View) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("metrics", "%s (rates over %s)", url, v.Interval.Round(time.Millisecond))
	if v.Uptime > 0 {
		row("uptime", "%s", v.Uptime)
	}
	switch v.Healthy {
	case 1:
		row("health", "healthy")
	case 0:
		row("health", "UNHEALTHY: a stage is down (see /healthz)")
	}
	row("resident memory", "%s", topview.FormatBytes(v.RSS))
	row("goroutines", "%s", topview.FormatCount(v.Goroutines))
	s := v.Store
	row("commitlog", "%s, writing %s/s", topview.FormatBytes(s.CommitLog), topview.FormatBytes(nanTo0(s.WriteRate)))
	row("unflushed", "%s", topview.FormatBytes(s.Unflushed))
	row("dispatch lag", "%s", topview.FormatBytes(s.Lag))
	row("send backlog", "%s", topview.FormatCount(s.SendBacklog))
	if v.HasTraffic {
		row("requests/s", "%s (refused %s/s)", topview.FormatRate(v.Traffic.Rate), topview.FormatRate(v.Traffic.RefusedRate))
	}
	var rates, busiest, down []string
	var restarts float64
	deepest, deepestName := 0.0, "-"
	for _, st := range v.Stages {
		rates = append(rates, fmt.Sprintf("%s %s", st.Name, topview.FormatRate(st.Rate)))
		restarts += st.Restarts
		if st.Depth > deepest {
			deepest, deepestName = st.Depth, st.Name
		}
		if st.Down {
			down = append(down, st.Name)
		}
		if st.Busy >= 0.5 {
			busiest = append(busiest, fmt.Sprintf("%s %.0f%%", st.Name, st.Busy*100))
		}
	}
	row("stage messages/s", "%s", strings.Join(rates, ", "))
	row("stage restarts", "%s", topview.FormatCount(restarts))
	if len(down) > 0 {
		row("stages down", "%s", strings.Join(down, ", "))
	}
	row("deepest mailbox", "%s (%s)", topview.FormatCount(deepest), deepestName)
	if len(busiest) > 0 {
		row("stages busy >= 50%", "%s", strings.Join(busiest, ", "))
	}
	row("messages in", "%s (%s/s; client sends)", topview.FormatCount(v.Messages.In), topview.FormatRate(v.Messages.InRate))
	row("messages out", "%s (%s/s; pull, POP, gRPC)", topview.FormatCount(v.Messages.Out), topview.FormatRate(v.Messages.OutRate))
	t := v.Timers
	row("timers pending", "%s", topview.FormatCount(t.Pending))
	row("timers due in 1 min", "%s", topview.FormatCount(t.DueNextMinute))
	row("timers enqueued/s", "%s", topview.FormatRate(t.EnqueuedRate))
	row("timers delivered/s", "%s", topview.FormatRate(t.DeliveredRate))
	row("timer lateness", "p50 %s, p99 %s", topview.FormatSeconds(t.LatenessP50), topview.FormatSeconds(t.LatenessP99))
	row("timers cancelled", "%s", topview.FormatCount(t.Cancelled))
	row("POP deadlines reached", "%s", topview.FormatCount(t.PopDeadlines))
	row("timers skipped", "%s", topview.FormatCount(t.Skipped))
	row("timer duplicates", "%s", topview.FormatCount(t.Duplicates))
	row("timer log", "%s", topview.FormatBytes(t.Log))
	return tw.Flush()
}

func nanTo0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// num is v for JSON, nil when unknown.
func num(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// statsJSON flattens a view for --json.
func statsJSON(v topview.View) map[string]any {
	stages := map[string]any{}
	for _, s := range v.Stages {
		stages[s.Name] = map[string]any{"messages_per_sec": num(s.Rate), "mailbox_depth": num(s.Depth),
			"p99_seconds": num(s.P99), "busy": num(s.Busy), "restarts": num(s.Restarts), "down": s.Down}
	}
	t, s := v.Timers, v.Store
	return map[string]any{
		"at": v.At.UTC().Format(time.RFC3339Nano), "interval_seconds": v.Interval.Seconds(),
		"uptime_seconds": v.Uptime.Seconds(), "resident_memory_bytes": num(v.RSS), "goroutines": num(v.Goroutines),
		"stages": stages, "healthy": num(v.Healthy),
		"requests_per_sec": num(v.Traffic.Rate), "refused_per_sec": num(v.Traffic.RefusedRate),
		"timer": map[string]any{"pending": num(t.Pending), "due_next_minute": num(t.DueNextMinute),
			"enqueued_per_sec": num(t.EnqueuedRate), "delivered_per_sec": num(t.DeliveredRate),
			"lateness_p50_seconds": num(t.LatenessP50), "lateness_p99_seconds": num(t.LatenessP99),
			"cancelled": num(t.Cancelled), "skipped": num(t.Skipped), "duplicates": num(t.Duplicates),
			"log_bytes": num(t.Log), "pop_deadlines": num(t.PopDeadlines)},
		"messages": map[string]any{"in": num(v.Messages.In), "out": num(v.Messages.Out),
			"in_per_sec": num(v.Messages.InRate), "out_per_sec": num(v.Messages.OutRate)},
		"store": map[string]any{"commitlog_bytes": num(s.CommitLog), "write_bytes_per_sec": num(s.WriteRate),
			"unflushed_bytes": num(s.Unflushed), "dispatch_lag_bytes": num(s.Lag), "send_backlog": num(s.SendBacklog)},
	}
}
