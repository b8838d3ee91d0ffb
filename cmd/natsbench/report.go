package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// goals are issue 8's targets for wheelmq/NATS.
var goals = map[string]float64{"sync": 1.5, "async": 2, "timer": 2}

// titles name the workloads in the table.
func titles(o options) map[string]string {
	return map[string]string{
		"sync":  "sync publish, 1 publisher",
		"async": fmt.Sprintf("async publish, window %d", o.window),
		"timer": fmt.Sprintf("timer enqueue vs NATS @at schedule, window %d", o.window),
	}
}

// median returns the result with the median rate (the lower middle for an
// even count).
func median(rs []result) result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b result) int {
		switch {
		case a.rate() < b.rate():
			return -1
		case a.rate() > b.rate():
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

// medianCPU returns the median per-message CPU time that get picks.
func medianCPU(rs []result, get func(result) time.Duration) time.Duration {
	if len(rs) == 0 {
		return 0
	}
	v := make([]time.Duration, len(rs))
	for i, r := range rs {
		v[i] = r.perMsg(get(r))
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// micros is d in microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// cpuModel returns the first CPU's model name.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// rateCell formats a median rate with the spread of the rounds.
func rateCell(rs []result) string {
	if len(rs) == 0 {
		return "-"
	}
	lo, hi := rs[0].rate(), rs[0].rate()
	for _, r := range rs {
		lo, hi = min(lo, r.rate()), max(hi, r.rate())
	}
	return fmt.Sprintf("%s/s (%s-%s)", human(median(rs).rate()), human(lo), human(hi))
}

// human formats a rate as 12.3k or 950.
func human(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

// ratio formats a/b of the medians.
func ratio(a, b []result) string {
	if len(a) == 0 || len(b) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", median(a).rate()/median(b).rate())
}

// report prints the comparison.
func report(w io.Writer, o options, m machine, res results) {
	fmt.Fprintf(w, "\nwheelmq vs NATS JetStream: %d-byte bodies, %d round(s) of %v per measurement (medians; range in brackets)\n",
		o.size, o.rounds, o.duration)
	fmt.Fprintf(w, "machine: %d CPUs, %s, %s/%s; load average %s before, %s after (shared machine: figures are noisy)\n",
		runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, m.loadBefore, m.loadAfter)
	flags := "async flush"
	if m.wheelmqFlags != "" {
		flags += ", " + m.wheelmqFlags
	}
	fmt.Fprintf(w, "servers: wheelmq (this repository, %s), %s (JetStream file storage); clients: native producer, nats.go %s, rocketmq-client-go %s\n",
		flags, m.natsVersion, moduleVersion("github.com/nats-io/nats.go"), moduleVersion("github.com/apache/rocketmq-client-go/v2"))
	fmt.Fprintf(w, "date: %s\n\n", time.Now().UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\twheelmq (native)\tNATS JetStream\twheelmq/NATS\tgoal\tmet")
	t := titles(o)
	for _, wl := range workloads {
		a, b := res[wl]["wheelmq"], res[wl]["nats"]
		met := "no"
		if len(a) > 0 && len(b) > 0 && median(a).rate() >= goals[wl]*median(b).rate() {
			met = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t>= %.1fx\t%s\n", t[wl], rateCell(a), rateCell(b), ratio(a, b), goals[wl], met)
	}
	if a, b := res["sync"]["wheelmq"], res["sync"]["nats"]; len(a) > 0 && len(b) > 0 {
		ma, mb := median(a), median(b)
		fmt.Fprintf(tw, "  sync latency p50 / p99\t%v / %v\t%v / %v\t\t\t\n", ma.p50.Round(time.Microsecond),
			ma.p99.Round(time.Microsecond), mb.p50.Round(time.Microsecond), mb.p99.Round(time.Microsecond))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nCPU per acknowledged message (medians; server process from /proc, client from getrusage):\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\twheelmq server\tNATS server\twheelmq/NATS\tnative client\tnats.go client\tofficial Go client")
	for _, wl := range workloads {
		srv := func(name string) time.Duration {
			return medianCPU(res[wl][name], func(r result) time.Duration { return r.serverCPU })
		}
		cli := func(name string) time.Duration {
			return medianCPU(res[wl][name], func(r result) time.Duration { return r.cliCPU })
		}
		cpuRatio := "-"
		if n := srv("nats"); n > 0 {
			cpuRatio = fmt.Sprintf("%.2fx", float64(srv("wheelmq"))/float64(n))
		}
		fmt.Fprintf(tw, "%s\t%.1f µs\t%.1f µs\t%s\t%.1f µs\t%.1f µs\t%.1f µs\n", t[wl], micros(srv("wheelmq")), micros(srv("nats")),
			cpuRatio, micros(cli("wheelmq")), micros(cli("nats")), micros(cli("official")))
	}
	_ = tw.Flush()
	if len(res["sync"]["official"]) == 0 {
		return
	}
	fmt.Fprintf(w, "\nthe official RocketMQ Go client against the same wheelmq, same run:\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tofficial Go client\tofficial/native\tofficial/NATS")
	for _, wl := range workloads {
		a := res[wl]["official"]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t[wl], rateCell(a), ratio(a, res[wl]["wheelmq"]), ratio(a, res[wl]["nats"]))
	}
	_ = tw.Flush()
	var failed []string
	for _, wl := range workloads {
		for name, rs := range res[wl] {
			for _, r := range rs {
				if r.failed > 0 {
					failed = append(failed, fmt.Sprintf("%s %s: %d", wl, name, r.failed))
				}
			}
		}
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		fmt.Fprintf(w, "\nfailed publishes: %s\n", strings.Join(failed, ", "))
	}
}
