package main

// `wheelctl bench timer`: the timer-message benchmarks of issue 3.
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
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// errBenchFailed means a scenario saw early, missing or failed messages.
var errBenchFailed = errors.New("benchmark found early, missing or failed messages")

// timerOpts are the flags of bench timer.
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
	// client sends the timers: "lean" (the pipelined sender of
	// leanclient.go), or a producer client (producerKinds: "official",
	// "native") at its own rate.
	client string
}

// Default timer counts per scenario.
var defaultN = map[string]int{"spread": 100_000, "burst": 500_000, "pending": 10_000_000}

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
	fmt.Fprintf(log, "bench timer %s: %d timers against %s at %s\n", name, n, t.describe(), t.broker())
	topic := fmt.Sprintf("bench_timer_%s_%d", name, time.Now().UnixNano())
	if err := createTopicAt(ctx, t.broker(), topic, o.send.queues, o.send.sec.clientOptions()); err != nil {
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
	stopConsume, err := consume(ctx, t.broker(), topic, o.send.queues, o.pullBatch, rec, o.send.sec.clientOptions())
	if err != nil {
		return r, err
	}
	dueOf := func(i int) int64 { return due[i] }
	if o.client == "" || o.client == "lean" {
		r.send, err = sendTimers(ctx, t.broker(), topic, n, dueOf, o.send)
	} else {
		r.send, err = sendTimersVia(ctx, o.client, t.namesrv(), topic, n, dueOf, o.send)
	}
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
	if err := createTopicAt(ctx, addr, topic, o.send.queues, o.send.sec.clientOptions()); err != nil {
		return 0, 0, err
	}
	st2, err := sendTimers(ctx, addr, topic, n, plainDue, quiet)
	if err != nil {
		return 0, 0, fmt.Errorf("baseline of plain sends: %w", err)
	}
	return st.rate(), st2.rate(), nil
}

// createTopicAt creates the benchmark topic on the broker at addr.
func createTopicAt(ctx context.Context, addr, topic string, queues int, opts remoting.ClientOptions) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	return createTopic(ctx, c, topic, queues)
}
