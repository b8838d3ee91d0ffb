package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/trace"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

func newBenchTimerCmd(g *globals, use string) *cobra.Command {
	var o timerOpts
	var common benchCommon
	var scenarios, serialize, traceOut string
	c := &cobra.Command{
		Use:   use + " [--scenario spread,burst,pending] [--count N]",
		Short: "Timer messages: enqueue rate, lateness percentiles, early deliveries, pending memory",
		Long: `Timer-message benchmarks with a lean pipelined client (cmd/wheelctl/leanclient.go):

  spread   N timers (default 100k) due uniformly over a window (5-10 s after the sends start):
           enqueue rate, lateness p50/p90/p99/max at the consumer, early count
  burst    N timers (default 500k) due within one second: time until the last is delivered
  pending  N timers (default 10M) due in about 30 days: broker memory, disk bytes per timer,
           restart time and timers lost across a restart

Lateness is the arrival at the consumer (one long-polling puller per queue) minus
TIMER_DELIVER_MS. The command exits 1 when a timer arrives early, goes missing or is not
acknowledged. Without --broker or --namesrv it starts wheelmq in this process; --spawn runs a
wheelmq binary instead (RSS without the client, SIGKILL restart).`,
		Example: `  wheelctl bench timer --scenario spread
  wheelctl bench timer --scenario burst --count 200000 --json
  wheelctl bench timer --scenario pending -n 1000000 --spawn ./bin/wheelmq`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.scenarios = strings.Split(scenarios, ",")
			for _, s := range o.scenarios {
				if _, ok := defaultN[s]; !ok {
					return usagef("--scenario %q: want spread, burst or pending", s)
				}
			}
			switch serialize {
			case "rocketmq":
				o.send.serialize = remoting.SerializeRocketMQ
			case "json":
				o.send.serialize = remoting.SerializeJSON
			default:
				return usagef("--serialize %q: want rocketmq or json", serialize)
			}
			if _, ok := producerKinds[o.client]; !ok && o.client != "lean" {
				return usagef("--client %q: want lean or one of %s", o.client, clientNames())
			}
			if o.send.size < 8 || o.send.conns < 1 || o.send.window < 1 || o.send.queues < 1 || o.pullBatch < 1 || o.pullBatch > 1024 {
				return usagef("need --size >= 8, --conns, --window, --queues >= 1 and --pull-batch in 1..1024")
			}
			if err := common.checkFlush(); err != nil {
				return err
			}
			if cmd.Flags().Changed("namesrv") {
				o.target.namesrv = g.namesrv
			}
			if cmd.Flags().Changed("broker") {
				o.target.brokerAddr = g.broker
			}
			if o.baseline && g.sec.overTLS() {
				return usagef("--baseline with --tls: the baseline's ack-only peer speaks plaintext only")
			}
			o.send.sec, o.target.sec = &g.sec, &g.sec
			o.target.flush = common.flush
			o.send.progress = g.stderr
			o.target.log = benchLogger(g.stderr)
			stopProfile, err := startCPUProfile(common.cpuprofile)
			if err != nil {
				return err
			}
			defer stopProfile()
			if traceOut != "" {
				f, err := os.Create(traceOut)
				if err != nil {
					return fmt.Errorf("trace: %w", err)
				}
				defer f.Close()
				if err := trace.Start(f); err != nil {
					return fmt.Errorf("trace: %w", err)
				}
				defer trace.Stop()
			}
			return runBenchTimer(cmd.Context(), o, common.json, g.stdout, g.stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&scenarios, "scenario", "spread,burst", "comma-separated scenarios: spread, burst, pending")
	f.IntVarP(&o.n, "count", "n", 0, "timers per scenario (0: spread 100000, burst 500000, pending 10000000)")
	f.StringVar(&o.client, "client", "lean", "sender: lean (pipelined, --conns x --window in flight) or a producer client ("+
		clientNames()+"), async with --conns x --window in flight, at its own rate")
	f.IntVar(&o.send.conns, "conns", 4, "producer connections")
	f.IntVar(&o.send.window, "window", 512, "requests in flight per producer connection")
	f.IntVar(&o.send.queues, "queues", 8, "queues of the benchmark topic (one puller each)")
	f.IntVar(&o.send.size, "size", 256, "message body bytes (>= 8)")
	f.StringVar(&serialize, "serialize", "rocketmq", "request header encoding: rocketmq (binary) or json")
	f.IntVar(&o.pullBatch, "pull-batch", 1024, "maxMsgNums per pull (1..1024)")
	f.DurationVar(&o.windowStart, "window-start", 5*time.Second, "spread: first due time, after the sends start")
	f.DurationVar(&o.windowLen, "window-len", 5*time.Second, "spread: length of the due window")
	f.DurationVar(&o.lead, "lead", 0, "burst: the due second starts at least this long after the sends start (0: 5 s + n/20000 s)")
	f.DurationVar(&o.pendingDelay, "pending-delay", 30*24*time.Hour, "pending: timers are due between this delay and one day more")
	f.DurationVar(&o.drain, "drain", time.Minute, "how long to wait for deliveries after the last due time")
	f.BoolVar(&o.softKill, "graceful-restart", false, "pending with --spawn: stop with SIGTERM instead of SIGKILL")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the due-time generator")
	f.IntVar(&o.target.pidFlag, "pid", 0, "external broker's pid, to read its RSS from /proc")
	f.StringVar(&o.target.data, "data", "", "external broker's store root (for disk usage); with the in-process or spawned broker: use and keep this directory")
	f.StringVar(&o.target.metricsURL, "metrics", "", "external broker's /metrics URL (for wheelmq_timer_pending)")
	f.StringVar(&o.target.spawn, "spawn", "", "path of a wheelmq binary to run as the broker")
	f.BoolVar(&o.target.keep, "keep", false, "keep the temporary store directories")
	f.Int64Var(&o.target.segmentSize, "segment-size", 0, "CommitLog segment size of the in-process broker (0: default 1 GiB)")
	f.BoolVar(&o.baseline, "baseline", false, "first measure plain (non-timer) sends with the same client, for comparison")
	f.StringVar(&o.dump, "dump", "", "write every delivery as CSV to <dump>-<scenario>.csv (seq, due_ms, store_late_ms, late_us)")
	f.StringVar(&traceOut, "trace", "", "write a runtime execution trace of this process (go tool trace)")
	common.addFlags(c)
	_ = c.RegisterFlagCompletionFunc("scenario", fixedCompletion("spread", "burst", "pending", "spread,burst"))
	_ = c.RegisterFlagCompletionFunc("serialize", fixedCompletion("rocketmq", "json"))
	return c
}

// runBenchTimer runs the scenarios and prints the report; it fails when a
// scenario saw early, missing or failed timers.
func runBenchTimer(ctx context.Context, o timerOpts, asJSON bool, stdout, stderr io.Writer) error {
	var results []scenarioResult
	var failed bool
	for _, s := range o.scenarios {
		n := o.n
		if n <= 0 {
			n = defaultN[s]
		}
		r, err := runScenario(ctx, s, n, o, stderr)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		results = append(results, r)
		failed = failed || r.failed()
	}
	if err := printTimerReport(stdout, results, o, asJSON); err != nil {
		return err
	}
	if failed {
		return errBenchFailed
	}
	return nil
}
