package main

// `wheelctl bench replicated`: the replicated-send matrix of issue 17. For
// each run, each flush mode and each target (a single broker with
// --replication none, then each group size with --min-in-sync-replicas),
// it spawns the processes afresh (benchgroup.go), drives every send
// workload against them with this process's producers, and stops them.
// The table gives medians and [min-max] of msg/s and of the ratio
// group/single, each ratio taken within one run (same minute of the
// machine), so the machine's drift falls on both sides.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// replOpts shape a bench replicated run.
type replOpts struct {
	runs      int
	duration  time.Duration
	size      int
	groups    []int
	minInSync int
	flushes   []string
	workloads []string
	client    string
	bin       string
	json      bool
	repRoot   string // --replica-dir
}

// replWorkloads are the send workloads by name (the same shapes as bench all).
var replWorkloads = map[string]produceOpts{
	"sync1":  {mode: "sync", producers: 1, window: 1},
	"sync16": {mode: "sync", producers: 16, clients: 1, window: 1},
	"async":  {mode: "async", producers: 1, window: 256},
}

func newBenchReplicatedCmd(g *globals) *cobra.Command {
	var o replOpts
	var groups, flushes, workloads string
	c := &cobra.Command{
		Use:   "replicated [--runs 2] [--duration 5s] [--groups 2,3] [--min-in-sync 2] [--wheelmq bin/wheelmq]",
		Short: "Replicated sends (groups of 2 and 3) against a single broker, as ratios",
		Long: `Spawn from --wheelmq, for every run and flush mode, a single broker (one name server, --replication
none) and each replicated group (three name servers with raft controllers, N brokers with
--replication controller --min-in-sync-replicas M; the first broker is made the master and every
broker is in the sync-state set before the clock starts), and drive the send workloads (sync1: one
producer, sync16: 16 producers on one client, async: 256 in flight) with this process's producers.
A replicated send is SEND_OK only once every sync-state-set member holds it.

The table gives medians and [min-max] over the runs of msg/s and of the ratio group/single,
each ratio within one run. Client, brokers and name servers share this machine's CPUs.`,
		Example: `  task build && bin/wheelctl bench replicated
  wheelctl bench replicated --runs 3 --duration 3s --workloads sync16,async --flush async`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.groups, err = parseInts(groups); err != nil {
				return usagef("--groups: %v", err)
			}
			o.flushes, o.workloads = splitList(flushes), splitList(workloads)
			for _, w := range o.workloads {
				if _, ok := replWorkloads[w]; !ok {
					return usagef("--workloads: %q, want sync1, sync16 or async", w)
				}
			}
			for _, f := range o.flushes {
				if f != "async" && f != "sync" {
					return usagef("--flush %q: want async or sync", f)
				}
			}
			if o.runs < 1 || o.duration <= 0 || len(o.groups) == 0 {
				return usagef("--runs must be at least 1, --duration positive, --groups not empty")
			}
			return runBenchReplicated(cmd.Context(), g, o)
		},
	}
	f := c.Flags()
	f.IntVar(&o.runs, "runs", 2, "runs of every case")
	f.DurationVar(&o.duration, "duration", 5*time.Second, "length of each workload")
	f.IntVar(&o.size, "size", 256, "message body bytes")
	f.StringVar(&groups, "groups", "2,3", "group sizes, comma-separated")
	f.IntVar(&o.minInSync, "min-in-sync", 2, "--min-in-sync-replicas of every group")
	f.StringVar(&flushes, "flush", "async,sync", "flush modes, comma-separated")
	f.StringVar(&workloads, "workloads", "sync1,sync16,async", "send workloads, comma-separated: sync1, sync16, async")
	f.StringVar(&o.client, "client", "native", "producer implementation: "+clientNames())
	f.StringVar(&o.bin, "wheelmq", defaultWheelmqBin(), "wheelmq binary to spawn")
	f.BoolVar(&o.json, "json", false, "print every sample as JSON")
	f.StringVar(&o.repRoot, "replica-dir", "", "put the replicas' stores under this directory (another disk; /dev/shm takes their fsync out)")
	return c
}

// replSample is one workload run against one target.
type replSample struct {
	Run      int     `json:"run"`
	Flush    string  `json:"flush"`
	Replicas int     `json:"replicas"` // 1: the single broker
	Workload string  `json:"workload"`
	MsgsPerS float64 `json:"msgs_per_sec"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	Errors   int64   `json:"errors"`
	// CPU per 1000 acknowledged sends, ms: this process (the client), the
	// master, the replicas together, the name servers together.
	CPUClient   float64 `json:"cpu_client_ms_per_1k"`
	CPUMaster   float64 `json:"cpu_master_ms_per_1k"`
	CPUReplicas float64 `json:"cpu_replicas_ms_per_1k"`
	CPUNamesrvs float64 `json:"cpu_namesrvs_ms_per_1k"`
}

func runBenchReplicated(ctx context.Context, g *globals, o replOpts) error {
	load0, start := loadAvg(), time.Now()
	targets := append([]int{1}, o.groups...)
	var samples []replSample
	for run := 1; run <= o.runs; run++ {
		for _, flush := range o.flushes {
			for _, n := range targets {
				got, err := replCase(ctx, g, o, run, flush, n)
				if err != nil {
					return err
				}
				samples = append(samples, got...)
			}
		}
	}
	if o.json {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(samples)
	}
	fmt.Fprintf(g.stdout, "bench replicated: %d run(s), %s per workload, %d-byte bodies, client %s, --min-in-sync-replicas %d\n",
		o.runs, o.duration, o.size, o.client, o.minInSync)
	fmt.Fprintf(g.stdout, "machine: %s; commit %s; load average %s -> %s; took %s\n",
		machine(), gitCommit(), load0, loadAvg(), time.Since(start).Round(time.Second))
	printReplTable(g.stdout, o, targets, samples)
	fmt.Fprintln(g.stdout, "\nCPU ms per 1000 acknowledged sends (medians; client = this process, which includes its warm-up):")
	printReplCPU(g.stdout, o, targets, samples)
	return nil
}

// replCase starts one target and runs every workload against it once.
func replCase(ctx context.Context, g *globals, o replOpts, run int, flush string, n int) ([]replSample, error) {
	spec := groupSpec{bin: o.bin, replicas: n, minInSync: o.minInSync, flush: flush, replicaRoot: o.repRoot}
	grp, err := startProcGroup(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer grp.close()
	var out []replSample
	for _, name := range o.workloads {
		w := replWorkloads[name]
		w.size, w.duration, w.client = o.size, o.duration, o.client
		label := fmt.Sprintf("run %d %s flush %s n=%d", run, flush, name, n)
		cpu0 := grp.cpu()
		res, err := produceOnce(ctx, grp.namesrvList(), label, w, &g.sec, g.stderr)
		cpu := grp.cpu().sub(cpu0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		if res.Messages == 0 {
			return nil, fmt.Errorf("%s: no send acknowledged: %s", label, res.FirstError)
		}
		s := replSample{Run: run, Flush: flush, Replicas: n, Workload: name, MsgsPerS: res.MsgsPerSec, Errors: res.Errors}
		per := func(d time.Duration) float64 { return float64(d.Milliseconds()) * 1000 / float64(res.Messages) }
		s.CPUClient, s.CPUMaster, s.CPUReplicas, s.CPUNamesrvs = per(cpu.client), per(cpu.master), per(cpu.replicas), per(cpu.namesrvs)
		if res.Latency != nil {
			s.P50Ms, s.P99Ms = res.Latency.P50, res.Latency.P99
		}
		out = append(out, s)
	}
	return out, nil
}

// printReplTable prints one row per flush and workload: the single
// broker's msg/s and p50, then per group its msg/s, p50 and ratio.
func printReplTable(w io.Writer, o replOpts, targets []int, samples []replSample) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"FLUSH", "SENDS", "SINGLE MSG/S", "P50 MS"}
	for _, n := range o.groups {
		head = append(head, fmt.Sprintf("GROUP %d MSG/S", n), "P50 MS", fmt.Sprintf("RATIO %d/1", n))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, flush := range o.flushes {
		for _, wl := range o.workloads {
			by := map[int]map[int]replSample{} // replicas -> run -> sample
			for _, s := range samples {
				if s.Flush == flush && s.Workload == wl {
					if by[s.Replicas] == nil {
						by[s.Replicas] = map[int]replSample{}
					}
					by[s.Replicas][s.Run] = s
				}
			}
			row := []string{flush, wl}
			for _, n := range targets {
				var rate, p50, ratio []float64
				for run, s := range by[n] {
					rate, p50 = append(rate, s.MsgsPerS), append(p50, s.P50Ms)
					if base, ok := by[1][run]; ok && base.MsgsPerS > 0 {
						ratio = append(ratio, s.MsgsPerS/base.MsgsPerS)
					}
				}
				row = append(row, medRange(rate, "%.0f"), fmt.Sprintf("%.2f", median(p50)))
				if n > 1 {
					row = append(row, medRange(ratio, "%.2f"))
				}
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	_ = tw.Flush()
}

// parseInts reads a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 2 {
			return nil, fmt.Errorf("%q: want group sizes of 2 or more", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// printReplCPU prints the CPU each kind of process spent per 1000 sends.
func printReplCPU(w io.Writer, o replOpts, targets []int, samples []replSample) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FLUSH\tSENDS\tTARGET\tCLIENT\tMASTER\tREPLICAS\tNAME SERVERS\tTOTAL")
	for _, flush := range o.flushes {
		for _, wl := range o.workloads {
			for _, n := range targets {
				var c, m, r, ns, tot []float64
				for _, s := range samples {
					if s.Flush == flush && s.Workload == wl && s.Replicas == n {
						c, m, r, ns = append(c, s.CPUClient), append(m, s.CPUMaster), append(r, s.CPUReplicas), append(ns, s.CPUNamesrvs)
						tot = append(tot, s.CPUClient+s.CPUMaster+s.CPUReplicas+s.CPUNamesrvs)
					}
				}
				name := "single"
				if n > 1 {
					name = fmt.Sprintf("group %d", n)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", flush, wl, name,
					median(c), median(m), median(r), median(ns), median(tot))
			}
		}
	}
	_ = tw.Flush()
}
