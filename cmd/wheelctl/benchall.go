package main

// `wheelctl bench all`: every benchmark of issue 11 in one command, each
// workload run --runs times (interleaved, so that the machine's noise falls
// on all of them alike), summarized in one table of medians and ranges
// with the machine, the commit and the load.
//
// Each run is a fresh process (this binary's own `bench produce` and
// `bench timer` with --json), so no run inherits another's heap, goroutines
// or page cache state in the Go runtime. The micro-benchmarks run with
// `go test` (a Go toolchain is needed; --micro=false skips them).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// allOpts shape a bench all run.
type allOpts struct {
	runs              int
	duration          time.Duration
	client            string
	send, timer, mini bool
	benchtime         string
	spreadN, burstN   int
	env               []string // the children's environment (nil: this process's)
}

func newBenchAllCmd(g *globals) *cobra.Command {
	var o allOpts
	c := &cobra.Command{
		Use:   "all [--runs 5] [--duration 5s] [--client official]",
		Short: "Every benchmark (sends against the ack-only peer, timers, micro-benchmarks) in one table",
		Long: `Run the send comparison against the ack-only peer (one producer, 16 producers on one client,
async with 256 in flight; async and sync flush), the timer spread (lean and official client) and
burst scenarios and the micro-benchmarks of the send and pull paths, --runs times each, and print one
table: medians with [min-max], the goals of issue 11, the machine, the commit and the load average.

The fsync latency of the temporary directory's disk is measured before each sync-flush run: with
one producer and sync flush each send waits for its own fsync, so the disk allows at most
1/fsync sends per second; the sync1 ratio is taken against min(peer, 1/fsync).`,
		Example: `  wheelctl bench all
  wheelctl bench all --runs 1 --duration 2s --micro=false   # a quick look`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.runs < 1 || o.duration <= 0 {
				return usagef("--runs must be at least 1 and --duration positive")
			}
			if _, ok := producerKinds[o.client]; !ok {
				return usagef("--client %q: want one of %s", o.client, clientNames())
			}
			return runBenchAll(cmd.Context(), g, o)
		},
	}
	f := c.Flags()
	f.IntVar(&o.runs, "runs", 5, "runs of every workload")
	f.DurationVar(&o.duration, "duration", 5*time.Second, "length of each send workload (per target)")
	f.StringVar(&o.client, "client", "official", "producer client of the send comparison: "+clientNames())
	f.BoolVar(&o.send, "send", true, "run the send comparison")
	f.BoolVar(&o.timer, "timer", true, "run the timer scenarios")
	f.BoolVar(&o.mini, "micro", true, "run the micro-benchmarks (go test)")
	f.StringVar(&o.benchtime, "benchtime", "5000x", "go test -benchtime of the micro-benchmarks")
	f.IntVar(&o.spreadN, "spread", 100_000, "timers of the spread scenario")
	f.IntVar(&o.burstN, "burst", 500_000, "timers of the burst scenario")
	return c
}

// sendWorkload is one line of the send comparison.
type sendWorkload struct {
	name, flush string
	args        []string
}

var sendWorkloads = []sendWorkload{
	{"sync1", "async", []string{"--producers", "1"}},
	{"sync16", "async", []string{"--producers", "16", "--clients", "1"}},
	{"async", "async", []string{"--mode", "async", "--window", "256"}},
	{"sync1", "sync", []string{"--producers", "1"}},
	{"sync16", "sync", []string{"--producers", "16", "--clients", "1"}},
	{"async", "sync", []string{"--mode", "async", "--window", "256"}},
}

// sendSample is one run of a send workload.
type sendSample struct {
	peer, wheelmq, ratio float64
	peerP50, p50         float64
	fsyncUs              float64 // sync flush: fsync p50 measured before the run
}

// timerWorkload is one timer scenario run.
type timerWorkload struct {
	name string
	args []string
}

func runBenchAll(ctx context.Context, g *globals, o allOpts) error {
	if g.sec.overTLS() {
		return usagef("bench all with --tls: its sends are compared with the ack-only peer, which speaks plaintext only; " +
			"compare 'bench produce --tls' with a plaintext 'bench produce' instead")
	}
	o.env = g.sec.childEnv()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench all: find this binary: %w", err)
	}
	out := g.stdout
	load0 := loadAvg()
	start := time.Now()
	sends := map[string][]sendSample{}
	timers := map[string][]timerScenario{}
	timerRuns := []timerWorkload{
		{"spread", []string{"--scenario", "spread", "-n", strconv.Itoa(o.spreadN)}},
		{"spread official", []string{"--scenario", "spread", "-n", strconv.Itoa(o.spreadN), "--client", "official"}},
		{"burst", []string{"--scenario", "burst", "-n", strconv.Itoa(o.burstN)}},
	}
	var errs []string
	for run := 1; run <= o.runs; run++ {
		if o.send {
			for _, w := range sendWorkloads {
				key := w.name + "/" + w.flush
				fmt.Fprintf(g.stderr, "bench all: run %d/%d: send %s, %s flush\n", run, o.runs, w.name, w.flush)
				s, err := runSendOnce(ctx, self, w, o)
				if err != nil {
					errs = append(errs, fmt.Sprintf("run %d send %s: %v", run, key, err))
					continue
				}
				sends[key] = append(sends[key], s)
			}
		}
		if o.timer {
			for _, w := range timerRuns {
				fmt.Fprintf(g.stderr, "bench all: run %d/%d: timer %s\n", run, o.runs, w.name)
				sc, err := runTimerOnce(ctx, self, w, o)
				if err != nil {
					errs = append(errs, fmt.Sprintf("run %d timer %s: %v", run, w.name, err))
					continue
				}
				timers[w.name] = append(timers[w.name], sc)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	var micro []microResult
	if o.mini {
		fmt.Fprintf(g.stderr, "bench all: micro-benchmarks (go test)\n")
		if micro, err = runMicro(ctx, o.benchtime); err != nil {
			errs = append(errs, fmt.Sprintf("micro-benchmarks: %v", err))
		}
	}
	printAll(out, o, load0, loadAvg(), time.Since(start), sends, timers, micro)
	if len(errs) > 0 {
		fmt.Fprintf(out, "\nfailures:\n  %s\n", strings.Join(errs, "\n  "))
		return fmt.Errorf("bench all: %d run(s) failed", len(errs))
	}
	return nil
}

// runSendOnce runs one send workload in a child process and, for sync
// flush, measures the disk's fsync latency first.
func runSendOnce(ctx context.Context, self string, w sendWorkload, o allOpts) (sendSample, error) {
	var s sendSample
	if w.flush == "sync" {
		us, err := fsyncLatency(os.TempDir(), 200)
		if err != nil {
			return s, err
		}
		s.fsyncUs = us
	}
	args := append([]string{"bench", "produce", "--peer", "--json", "--client", o.client, "--flush", w.flush,
		"--duration", o.duration.String()}, w.args...)
	var rep benchReport
	if err := runChildJSON(ctx, self, args, o.env, &rep); err != nil {
		return s, err
	}
	if len(rep.Results) != 2 {
		return s, fmt.Errorf("%d results, want the peer's and wheelmq's", len(rep.Results))
	}
	s.peer, s.wheelmq = rep.Results[0].MsgsPerSec, rep.Results[1].MsgsPerSec
	if rep.RatioToPeer != nil {
		s.ratio = *rep.RatioToPeer
	}
	if l := rep.Results[0].Latency; l != nil {
		s.peerP50 = l.P50
	}
	if l := rep.Results[1].Latency; l != nil {
		s.p50 = l.P50
	}
	return s, nil
}

// runTimerOnce runs one timer scenario in a child process.
func runTimerOnce(ctx context.Context, self string, w timerWorkload, o allOpts) (timerScenario, error) {
	var rep timerReport
	if err := runChildJSON(ctx, self, append([]string{"bench", "timer", "--json"}, w.args...), o.env, &rep); err != nil {
		return timerScenario{}, err
	}
	if len(rep.Scenarios) != 1 {
		return timerScenario{}, fmt.Errorf("%d scenarios in the report, want 1", len(rep.Scenarios))
	}
	return rep.Scenarios[0], nil
}

// runChildJSON runs this binary with args and env (nil: this process's)
// and decodes its stdout into v.
func runChildJSON(ctx context.Context, self string, args []string, env []string, v any) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		if runErr != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(args[:2], " "), runErr, lastLine(stderr.String()))
		}
		return fmt.Errorf("%s: decode the report: %w", strings.Join(args[:2], " "), err)
	}
	if runErr != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args[:2], " "), runErr, lastLine(stderr.String()))
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// fsyncLatency returns the median time, in µs, of n 4 KiB appends each
// followed by an fsync, in a temporary file under dir: what one send costs
// the disk with sync flush.
func fsyncLatency(dir string, n int) (float64, error) {
	f, err := os.CreateTemp(dir, "wheelctl-fsync-")
	if err != nil {
		return 0, fmt.Errorf("fsync probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	lat := make([]float64, 0, n)
	for i := range n {
		t := time.Now()
		if _, err := f.WriteAt(buf, int64(i)*int64(len(buf))); err != nil {
			return 0, fmt.Errorf("fsync probe write: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("fsync probe: %w", err)
		}
		lat = append(lat, float64(time.Since(t).Microseconds()))
	}
	return median(lat), nil
}

// microResult is one micro-benchmark line.
type microResult struct {
	name                 string
	nsPerOp, allocsPerOp float64
	bytesPerOp           float64
	allocsPerMsg         float64 // pull path: per message (-1: none)
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// runMicro runs the send and pull path benchmarks with go test.
func runMicro(ctx context.Context, benchtime string) ([]microResult, error) {
	dir, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "SendPath|PullPath", "-benchmem",
		"-benchtime", benchtime, "./netloop")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test: %w: %s", err, lastLine(stderr.String()+stdout.String()))
	}
	var out []microResult
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		r := microResult{name: strings.TrimPrefix(m[1], "Benchmark"), allocsPerMsg: -1}
		f := strings.Fields(m[3])
		for i := 1; i < len(f); i++ {
			v, err := strconv.ParseFloat(f[i-1], 64)
			if err != nil {
				continue
			}
			switch f[i] {
			case "ns/op":
				r.nsPerOp = v
			case "allocs/op":
				r.allocsPerOp = v
			case "B/op":
				r.bytesPerOp = v
			case "allocs/msg":
				r.allocsPerMsg = v
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// moduleRoot finds the wheelmq module (go.mod) from the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/wheelmq/wheelmq")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("micro-benchmarks: run from the wheelmq source tree (no go.mod of wheelmq above %s)", dir)
		}
		dir = parent
	}
}
