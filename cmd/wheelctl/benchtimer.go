package main

// `wheelctl bench-timer`: the timer-message benchmarks of issue 3.
//
//	spread   N timers (default 100k) due uniformly over a window (default
//	         5-10 s after the sends start): enqueue rate (acknowledged
//	         sends/s), lateness p50/p99/max at the consumer, early count.
//	burst    N timers (default 500k) due within one second: time from that
//	         second's start until the last is delivered, lateness, early.
//	pending  N timers (default 10M) due in about 30 days: broker RSS, disk
//	         bytes per pending timer, restart time.
//
// Lateness = arrival at the consumer (long polling, one puller per queue)
// minus TIMER_DELIVER_MS. A delivery is early when it arrives before its due
// time or was written back (STORETIMESTAMP) before it. The command exits
// non-zero on early, missing or unacknowledged messages.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime/trace"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// errBenchFailed means a scenario saw early, missing or failed messages.
var errBenchFailed = errors.New("benchmark found early, missing or failed messages")

// timerOpts are the flags of bench-timer.
type timerOpts struct {
	scenarios    []string
	n            int
	send         sendOpts
	pullBatch    int
	windowStart  time.Duration
	windowLen    time.Duration
	lead         time.Duration
	pendingDelay time.Duration
	drain        time.Duration
	softKill     bool
	baseline     bool
	dump         string
	seed         uint64
	target       targetOpts
}

// Default timer counts per scenario.
var defaultN = map[string]int{"spread": 100_000, "burst": 500_000, "pending": 10_000_000}

func runBenchTimer(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-timer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o timerOpts
	sc := fs.String("scenario", "spread,burst", "comma-separated scenarios: spread, burst, pending")
	fs.IntVar(&o.n, "n", 0, "timers per scenario (0: spread 100000, burst 500000, pending 10000000)")
	fs.IntVar(&o.send.conns, "conns", 4, "producer connections")
	fs.IntVar(&o.send.window, "window", 512, "requests in flight per producer connection")
	fs.IntVar(&o.send.queues, "queues", 8, "queues of the benchmark topic (one puller each)")
	fs.IntVar(&o.send.size, "size", 256, "message body bytes (>= 8)")
	ser := fs.String("serialize", "rocketmq", "request header encoding: rocketmq (binary) or json")
	fs.IntVar(&o.pullBatch, "pull-batch", 1024, "maxMsgNums per pull (1..1024)")
	fs.DurationVar(&o.windowStart, "window-start", 5*time.Second, "spread: first due time, after the sends start")
	fs.DurationVar(&o.windowLen, "window-len", 5*time.Second, "spread: length of the due window")
	fs.DurationVar(&o.lead, "lead", 0, "burst: the due second starts at least this long after the sends start (0: 5 s + n/20000 s)")
	fs.DurationVar(&o.pendingDelay, "pending-delay", 30*24*time.Hour, "pending: timers are due between this delay and one day more")
	fs.DurationVar(&o.drain, "drain", 60*time.Second, "how long to wait for deliveries after the last due time")
	fs.BoolVar(&o.softKill, "graceful-restart", false, "pending with --spawn: stop with SIGTERM instead of SIGKILL")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the due-time generator")
	fs.StringVar(&o.target.namesrv, "namesrv", "", "name server of an external wheelmq (its TBW102 broker is used)")
	fs.StringVar(&o.target.brokerAddr, "broker", "", "broker address of an external wheelmq")
	fs.IntVar(&o.target.pidFlag, "pid", 0, "external broker's pid, to read its RSS from /proc")
	fs.StringVar(&o.target.data, "data", "", "external broker's store root (for disk usage); with the in-process or spawned broker: use and keep this directory")
	fs.StringVar(&o.target.metricsURL, "metrics", "", "external broker's /metrics URL (for wheelmq_timer_pending)")
	fs.StringVar(&o.target.spawn, "spawn", "", "path of a wheelmq binary to run as the broker (RSS without the client, SIGKILL restart)")
	fs.StringVar(&o.target.flush, "flush", "async", "flush mode of the in-process broker: async or sync")
	fs.BoolVar(&o.target.keep, "keep", false, "keep the temporary store directories")
	fs.Int64Var(&o.target.segmentSize, "segment-size", 0, "CommitLog segment size of the in-process broker (0: default 1 GiB)")
	fs.BoolVar(&o.baseline, "baseline", false, "first measure plain (non-timer) sends with the same client, for comparison")
	fs.StringVar(&o.dump, "dump", "", "write every delivery as CSV to <dump>-<scenario>.csv (seq, due_ms, store_late_ms, late_us)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (client, and broker when in-process)")
	traceOut := fs.String("trace", "", "write a runtime execution trace of this process (go tool trace)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.scenarios = strings.Split(*sc, ",")
	for _, s := range o.scenarios {
		if _, ok := defaultN[s]; !ok {
			return fmt.Errorf("unknown scenario %q (want spread, burst or pending)", s)
		}
	}
	switch *ser {
	case "rocketmq":
		o.send.serialize = remoting.SerializeRocketMQ
	case "json":
		o.send.serialize = remoting.SerializeJSON
	default:
		return fmt.Errorf("--serialize %q: want rocketmq or json", *ser)
	}
	if o.send.size < 8 || o.send.conns < 1 || o.send.window < 1 || o.send.queues < 1 || o.pullBatch < 1 || o.pullBatch > 1024 {
		return fmt.Errorf("need --size >= 8, --conns, --window, --queues >= 1 and --pull-batch in 1..1024")
	}
	o.send.progress = stderr
	o.target.log = zerolog.New(stderr).Level(zerolog.WarnLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *traceOut != "" {
		f, err := os.Create(*traceOut)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer trace.Stop()
	}

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
	printResults(stdout, results, o)
	if failed {
		return errBenchFailed
	}
	return nil
}

// scenarioResult is one scenario's figures.
type scenarioResult struct {
	name, target string
	n            int
	send         sendStats
	delivered    int
	lat          latency
	storeLat     latency // written back: STORETIMESTAMP - due
	steadyLat    latency // spread: timers due 1 s or more after the last send was acknowledged
	steadyN      int
	early        int
	storeEarly   int
	dups, strays int
	mismatched   int
	badRecords   int
	pullFailures int
	burstLast    time.Duration // burst: due second's start to last delivery
	notReady     string        // why the scenario's premise failed
	pending      *pendingResult
	nullRate     float64 // --baseline: same client against the ack-only peer
	plainRate    float64 // --baseline: same client, plain messages to the same broker
}

// failed reports a result that must fail the command.
func (r scenarioResult) failed() bool {
	if r.send.failed > 0 || r.notReady != "" {
		return true
	}
	if r.pending != nil {
		return r.pending.lost > 0 || r.pending.skipped > 0
	}
	return r.early > 0 || r.storeEarly > 0 || r.delivered < int(r.send.acked) || r.strays > 0 || r.mismatched > 0
}

func runScenario(ctx context.Context, name string, n int, o timerOpts, log io.Writer) (scenarioResult, error) {
	t, err := openTarget(ctx, o.target)
	if err != nil {
		return scenarioResult{}, err
	}
	defer t.close()
	fmt.Fprintf(log, "bench-timer %s: %d timers against %s at %s\n", name, n, t.describe(), t.broker())
	topic := fmt.Sprintf("bench_timer_%s_%d", name, time.Now().UnixNano())
	if err := createTopicAt(ctx, t.broker(), topic, o.send.queues); err != nil {
		return scenarioResult{}, err
	}
	r := scenarioResult{name: name, target: t.describe(), n: n}
	if name == "pending" {
		p, st, err := runPending(ctx, t, topic, n, o, log)
		r.send, r.pending = st, p
		return r, err
	}
	if o.baseline {
		if r.nullRate, r.plainRate, err = baselines(ctx, t.broker(), n, o); err != nil {
			return r, err
		}
		fmt.Fprintf(log, "  baselines: ack-only peer %.0f/s, plain sends to wheelmq %.0f/s\n", r.nullRate, r.plainRate)
	}
	rng := rand.New(rand.NewPCG(o.seed, uint64(n)))
	start := time.Now()
	base, span := start.Add(o.windowStart), o.windowLen
	if name == "burst" {
		lead := o.lead
		if lead <= 0 {
			lead = 5*time.Second + time.Duration(n)*time.Second/20000
		}
		base, span = start.Add(lead).Truncate(time.Second).Add(time.Second), time.Second
	}
	due := make([]int64, n)
	for i := range due {
		due[i] = base.UnixMilli() + rng.Int64N(max(span.Milliseconds(), 1))
	}
	rec := newRecorder(due)
	stopConsume, err := consume(ctx, t.broker(), topic, o.send.queues, o.pullBatch, rec)
	if err != nil {
		return r, err
	}
	r.send, err = sendTimers(ctx, t.broker(), topic, n, func(i int) int64 { return due[i] }, o.send)
	if err != nil {
		stopConsume()
		return r, err
	}
	fmt.Fprintf(log, "  %d acknowledged in %.2f s (%.0f/s), waiting for deliveries\n",
		r.send.acked, r.send.elapsed.Seconds(), r.send.rate())
	if name == "burst" && r.send.lastAck.After(base.Add(-500*time.Millisecond)) {
		r.notReady = fmt.Sprintf("sends finished %s after the due second started; raise --lead",
			r.send.lastAck.Sub(base).Round(time.Millisecond))
	}
	deadline := base.Add(span + o.drain)
	for rec.delivered() < int(r.send.acked) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let duplicates show up
	r.pullFailures = stopConsume()
	if o.dump != "" {
		if err := rec.dump(o.dump + "-" + name + ".csv"); err != nil {
			return r, err
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r.delivered, r.lat, r.storeLat = len(rec.lateUs), percentiles(rec.lateUs), percentiles(rec.storeLateUs)
	r.early, r.storeEarly, r.dups, r.strays = rec.early, rec.storeEarly, rec.dups, rec.strays
	r.mismatched, r.badRecords = rec.mismatched, rec.badRecords
	if name == "spread" {
		// Timers due once the broker has absorbed the send phase.
		from := r.send.lastAck.Add(time.Second).UnixMilli()
		var us []int64
		for i, seq := range rec.seqs {
			if rec.dueMs[seq] >= from {
				us = append(us, rec.lateUs[i])
			}
		}
		r.steadyN, r.steadyLat = len(us), percentiles(us)
	}
	if name == "burst" && !rec.lastArrival.IsZero() {
		r.burstLast = rec.lastArrival.Sub(base)
	}
	return r, ctx.Err()
}

// baselines measures the same client with n plain messages against the
// ack-only peer and against the broker at addr.
func baselines(ctx context.Context, addr string, n int, o timerOpts) (null, plain float64, err error) {
	nb, err := startNullBroker(o.target.log)
	if err != nil {
		return 0, 0, err
	}
	defer nb.stop()
	plainDue := func(int) int64 { return 0 }
	quiet := o.send
	quiet.progress = nil
	st, err := sendTimers(ctx, nb.addr(), "bench_timer_baseline", n, plainDue, quiet)
	if err != nil {
		return 0, 0, fmt.Errorf("baseline against the ack-only peer: %w", err)
	}
	topic := fmt.Sprintf("bench_timer_plain_%d", time.Now().UnixNano())
	if err := createTopicAt(ctx, addr, topic, o.send.queues); err != nil {
		return 0, 0, err
	}
	st2, err := sendTimers(ctx, addr, topic, n, plainDue, quiet)
	if err != nil {
		return 0, 0, fmt.Errorf("baseline of plain sends: %w", err)
	}
	return st.rate(), st2.rate(), nil
}

// createTopicAt creates the benchmark topic on the broker at addr.
func createTopicAt(ctx context.Context, addr, topic string, queues int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		return err
	}
	defer c.Close()
	return createTopic(ctx, c, topic, queues)
}

// printResults writes the report table.
func printResults(w io.Writer, rs []scenarioResult, o timerOpts) {
	fmt.Fprintf(w, "timer messages, %d-byte bodies, lean client: %d connections x %d in flight, %d queues, pulls of up to %d\n",
		o.send.size, o.send.conns, o.send.window, o.send.queues, o.pullBatch)
	var delivery, pending []scenarioResult
	for _, r := range rs {
		if r.pending != nil {
			pending = append(pending, r)
		} else {
			delivery = append(delivery, r)
		}
	}
	if len(delivery) > 0 {
		fmt.Fprintf(w, "%-8s %9s %10s %10s %6s %9s %9s %9s %10s  %s\n",
			"scenario", "timers", "enqueue/s", "delivered", "early", "p50 ms", "p99 ms", "max ms", "last at", "notes")
		for _, r := range delivery {
			last := "-"
			if r.name == "burst" {
				last = fmt.Sprintf("%.2f s", r.burstLast.Seconds())
			}
			fmt.Fprintf(w, "%-8s %9d %10.0f %10d %6d %9.1f %9.1f %9.1f %10s  %s\n",
				r.name, r.n, r.send.rate(), r.delivered, r.early+r.storeEarly, r.lat.p50, r.lat.p99, r.lat.max, last, notes(r))
		}
		for _, r := range delivery {
			fmt.Fprintf(w, "%-8s written back (STORETIMESTAMP - due, ms resolution): p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
				r.name, r.storeLat.p50, r.storeLat.p99, r.storeLat.max)
		}
		for _, r := range delivery {
			if r.steadyN > 0 {
				fmt.Fprintf(w, "%-8s %d timers due >= 1 s after the last send ack: lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
					r.name, r.steadyN, r.steadyLat.p50, r.steadyLat.p99, r.steadyLat.max)
			}
		}
		for _, r := range delivery {
			if r.plainRate > 0 {
				fmt.Fprintf(w, "%-8s same client, %d plain messages: ack-only peer %.0f/s, wheelmq %.0f/s\n",
					r.name, r.n, r.nullRate, r.plainRate)
			}
		}
	}
	for _, r := range pending {
		printPending(w, r)
	}
}

// notes lists the anomalies of a delivery scenario.
func notes(r scenarioResult) string {
	var s []string
	add := func(n int64, what string) {
		if n > 0 {
			s = append(s, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(int64(r.early), "early at consumer")
	add(int64(r.storeEarly), "written back early")
	add(int64(r.send.acked)-int64(r.delivered), "missing")
	add(r.send.failed, "send failures ("+r.send.firstErr+")")
	add(r.send.busy, "SYSTEM_BUSY retried")
	add(r.send.sentLate, "acknowledged after due")
	add(int64(r.dups), "duplicates")
	add(int64(r.strays), "strays")
	add(int64(r.mismatched), "TIMER_DELIVER_MS mismatches")
	add(int64(r.badRecords), "bad pull bodies")
	add(int64(r.pullFailures), "failed pulls")
	if r.notReady != "" {
		s = append(s, r.notReady)
	}
	if len(s) == 0 {
		return "ok"
	}
	return strings.Join(s, "; ")
}
