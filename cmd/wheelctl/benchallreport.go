package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// bench all's report: the medians and ranges of the runs, the verdicts
// against the goals, and the machine it ran on.

// median and spread of values.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medRange formats the median and [min-max] of v with format f.
func medRange(v []float64, f string) string {
	if len(v) == 0 {
		return "-"
	}
	if len(v) == 1 {
		return fmt.Sprintf(f, v[0])
	}
	return fmt.Sprintf(f+" ["+f+"-"+f+"]", median(v), slices.Min(v), slices.Max(v))
}

func pick[T any](v []T, f func(T) float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		out = append(out, f(x))
	}
	return out
}

// verdict says whether the median meets a goal.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func printAll(w io.Writer, o allOpts, load0, load1 string, took time.Duration, sends map[string][]sendSample,
	timers map[string][]timerScenario, micro []microResult) {
	fmt.Fprintf(w, "wheelmq bench all: commit %s, %s, %s\n", gitCommit(), runtime.Version(), machine())
	fmt.Fprintf(w, "load average %s before, %s after; %d run(s) each, took %s; medians [min-max]\n\n",
		load0, load1, o.runs, took.Round(time.Second))
	if len(sends) > 0 {
		fmt.Fprintf(w, "Sends: client %s, 256-byte bodies, %s per target, against the ack-only peer in the same run\n", o.client, o.duration)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKLOAD\tFLUSH\tPEER MSG/S\tWHEELMQ MSG/S\tRATIO\tP50 MS (PEER / WHEELMQ)\tGOAL")
		for _, wl := range sendWorkloads {
			key := wl.name + "/" + wl.flush
			ss := sends[key]
			if len(ss) == 0 {
				continue
			}
			ratios := pick(ss, func(s sendSample) float64 { return s.ratio })
			goal := ""
			switch key {
			case "sync1/async":
				goal = "0.90: " + verdict(median(ratios) >= 0.90)
			case "sync16/async", "async/async":
				goal = "0.90: " + verdict(median(ratios) >= 0.90)
			case "sync16/sync":
				goal = "0.75: " + verdict(median(ratios) >= 0.75)
			case "sync1/sync":
				limits := pick(ss, func(s sendSample) float64 {
					return s.wheelmq / math.Min(s.peer, 1e6/math.Max(s.fsyncUs, 1))
				})
				goal = fmt.Sprintf("0.9 of min(peer, 1/fsync): %s (%s)", medRange(limits, "%.2f"), verdict(median(limits) >= 0.9))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s / %s\t%s\n", wl.name, wl.flush,
				medRange(pick(ss, func(s sendSample) float64 { return s.peer }), "%.0f"),
				medRange(pick(ss, func(s sendSample) float64 { return s.wheelmq }), "%.0f"),
				medRange(ratios, "%.2f"),
				medRange(pick(ss, func(s sendSample) float64 { return s.peerP50 }), "%.2f"),
				medRange(pick(ss, func(s sendSample) float64 { return s.p50 }), "%.2f"), goal)
		}
		_ = tw.Flush()
		if ss := sends["sync1/sync"]; len(ss) > 0 {
			fs := pick(ss, func(s sendSample) float64 { return s.fsyncUs })
			fmt.Fprintf(w, "fsync of a 4 KiB append on the temporary directory's disk: p50 %s µs (the disk allows %.0f sync1 sends/s)\n",
				medRange(fs, "%.0f"), 1e6/median(fs))
		}
		fmt.Fprintln(w)
	}
	if len(timers) > 0 {
		fmt.Fprintln(w, "Timers (in-process broker; lean client unless noted): lateness at the consumer")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SCENARIO\tENQUEUE/S\tP50 MS\tP99 MS\tMAX MS\tLAST DELIVERED S\tEARLY\tGOAL")
		for _, name := range []string{"spread", "spread official", "burst"} {
			ts := timers[name]
			if len(ts) == 0 {
				continue
			}
			lat := func(f func(*latency) float64) []float64 {
				return pick(ts, func(s timerScenario) float64 {
					if s.Lateness == nil {
						return math.NaN()
					}
					return f(s.Lateness)
				})
			}
			early := slices.Max(pick(ts, func(s timerScenario) float64 { return float64(s.Early) }))
			p99 := lat(func(l *latency) float64 { return l.P99 })
			last := pick(ts, func(s timerScenario) float64 { return s.BurstLastS })
			goal := ""
			switch name {
			case "spread":
				goal = "p99 <= 10 ms: " + verdict(median(p99) <= 10)
			case "spread official":
				goal = "p99 <= 20 ms: " + verdict(median(p99) <= 20)
			case "burst":
				goal = fmt.Sprintf("all within 3 s in every run: %s", verdict(slices.Max(last) <= 3))
			}
			lastS := "-"
			if name == "burst" {
				lastS = medRange(last, "%.2f")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\n", name,
				medRange(pick(ts, func(s timerScenario) float64 { return s.EnqueuePerSec }), "%.0f"),
				medRange(lat(func(l *latency) float64 { return l.P50 }), "%.1f"), medRange(p99, "%.1f"),
				medRange(lat(func(l *latency) float64 { return l.Max }), "%.1f"), lastS, early, goal)
		}
		_ = tw.Flush()
		fmt.Fprintln(w)
	}
	if len(micro) > 0 {
		fmt.Fprintln(w, "Micro-benchmarks (go test ./netloop -bench 'SendPath|PullPath' -benchmem): whole broker, frame in to answer out")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BENCHMARK\tNS/OP\tB/OP\tALLOCS/OP\tALLOCS/MSG")
		for _, m := range micro {
			perMsg := "-"
			if m.allocsPerMsg >= 0 {
				perMsg = fmt.Sprintf("%.2f", m.allocsPerMsg)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%s\n", m.name, m.nsPerOp, m.bytesPerOp, m.allocsPerOp, perMsg)
		}
		_ = tw.Flush()
	}
}

// gitCommit names the source tree's commit, or "unknown".
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+changes"
	}
	return c
}

// machine describes the CPUs and kernel.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := runtime.GOOS
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel += " " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d CPUs (%s), %s", runtime.NumCPU(), model, kernel)
}

// loadAvg is the 1-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
