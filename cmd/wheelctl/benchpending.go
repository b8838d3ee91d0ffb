package main

// The `pending` scenario of bench-timer: many timers due far in the future;
// memory, disk and restart of a broker holding them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"time"
)

// pendingResult holds the figures of the pending scenario.
type pendingResult struct {
	delay        time.Duration // timers are due after this, plus up to a day
	wheelReady   time.Duration // sends start until wheelmq_timer_pending >= acknowledged (0: unknown)
	pendingSeen  float64
	rss, hwm     int64 // broker process, once the wheel holds every timer
	goHeap       uint64
	inProcess    bool
	timerDisk    [2]int64 // allocated, apparent
	commitDisk   [2]int64
	cqDisk       [2]int64
	diskKnown    bool
	restart      restartInfo
	restartErr   string
	serveAfter   time.Duration // new broker started until a send was acknowledged
	recovered    time.Duration // new broker started until wheelmq_timer_pending was back
	pendingAfter float64
	rssAfter     int64
	lost         int64   // timers the wheel held before the restart and not after
	skipped      float64 // wheelmq_timer_skipped_total before the restart
}

// splitmix64 is a stateless hash for due times that need no table.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

func runPending(ctx context.Context, t benchTarget, topic string, n int, o timerOpts, log io.Writer) (*pendingResult, sendStats, error) {
	p := &pendingResult{delay: o.pendingDelay}
	_, p.inProcess = t.(*inProcessTarget)
	start := time.Now()
	base := start.Add(o.pendingDelay).UnixMilli()
	const day = 24 * 60 * 60 * 1000
	dueOf := func(i int) int64 { return base + int64(splitmix64(uint64(i)+o.seed)%day) }
	st, err := sendTimers(ctx, t.broker(), topic, n, dueOf, o.send)
	if err != nil {
		return p, st, err
	}
	fmt.Fprintf(log, "  %d acknowledged in %.1f s (%.0f/s), waiting for the wheel\n", st.acked, st.elapsed.Seconds(), st.rate())
	want := float64(st.acked)
	if v, ok := waitPending(ctx, t, want, 30*time.Minute); ok {
		p.pendingSeen = v
		if v >= want {
			p.wheelReady = time.Since(start)
		}
		p.skipped, _ = t.metric("wheelmq_timer_skipped_total")
	} else {
		fmt.Fprintf(log, "  wheelmq_timer_pending not readable (give --metrics for an external broker); waiting 5 s\n")
		time.Sleep(5 * time.Second)
	}
	if p.inProcess {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		p.goHeap = ms.HeapInuse
	}
	if pid := t.pid(); pid != 0 {
		if p.rss, p.hwm, err = procMemory(pid); err != nil {
			return p, st, err
		}
	}
	if dir := t.dataDir(); dir != "" {
		var errs []error
		var e1, e2, e3 error
		p.timerDisk[0], p.timerDisk[1], e1 = diskUsage(filepath.Join(dir, "timer"))
		p.commitDisk[0], p.commitDisk[1], e2 = diskUsage(filepath.Join(dir, "commitlog"))
		p.cqDisk[0], p.cqDisk[1], e3 = diskUsage(filepath.Join(dir, "consumequeue"))
		if errs = append(errs, e1, e2, e3); errors.Join(errs...) == nil {
			p.diskKnown = true
		}
	}
	fmt.Fprintf(log, "  wheel holds %.0f timers; restarting the broker\n", p.pendingSeen)
	p.restart, err = t.restart(!o.softKill)
	if err != nil {
		if errors.Is(err, errNoRestart) {
			p.restartErr = "not measured: " + err.Error()
			return p, st, nil
		}
		return p, st, err
	}
	if err := firstSend(ctx, t.broker(), topic, 10*time.Minute, o.send.sec.clientOptions()); err != nil {
		return p, st, err
	}
	p.serveAfter = time.Since(p.restart.startedAt)
	before := want
	if p.pendingSeen > 0 {
		before = p.pendingSeen // what the wheel held when the broker was stopped
	}
	if v, ok := waitPending(ctx, t, before, 10*time.Minute); ok {
		p.pendingAfter = v
		p.recovered = time.Since(p.restart.startedAt)
		if v < before {
			p.lost = int64(before - v)
		}
	}
	if pid := t.pid(); pid != 0 {
		p.rssAfter, _, _ = procMemory(pid)
	}
	return p, st, nil
}

// waitPending polls wheelmq_timer_pending until it reaches want, stops
// growing for 15 s, or limit passes; ok is false when the gauge cannot be
// read at all.
func waitPending(ctx context.Context, t benchTarget, want float64, limit time.Duration) (float64, bool) {
	start := time.Now()
	var v, last float64
	var ok bool
	lastChange := start
	for time.Since(start) < limit && ctx.Err() == nil {
		if v, ok = t.metric("wheelmq_timer_pending"); ok && v >= want {
			return v, true
		}
		if !ok && time.Since(start) > 5*time.Second {
			return 0, false // not exported
		}
		if v != last {
			last, lastChange = v, time.Now()
		} else if time.Since(lastChange) > 15*time.Second {
			return v, ok // stalled below want: some timers never reached the wheel
		}
		time.Sleep(100 * time.Millisecond)
	}
	return v, ok
}

// printPending writes the pending scenario's figures.
func printPending(w io.Writer, r scenarioResult) {
	p := r.pending
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	per := func(b int64) string {
		if r.send.acked == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f B/timer", float64(b)/float64(r.send.acked))
	}
	fmt.Fprintf(w, "pending: %d timers due in %.0f days + up to 1 day, broker: %s\n", r.n, p.delay.Hours()/24, r.target)
	fmt.Fprintf(w, "  %-34s %d acknowledged, %.0f/s (%.1f s), %d failed, %d SYSTEM_BUSY retried\n",
		"enqueue", r.send.acked, r.send.rate(), r.send.elapsed.Seconds(), r.send.failed, r.send.busy)
	if p.wheelReady > 0 {
		fmt.Fprintf(w, "  %-34s %.1f s after the first send (%.0f timers/s)\n", "all in the wheel",
			p.wheelReady.Seconds(), float64(r.send.acked)/p.wheelReady.Seconds())
	} else {
		fmt.Fprintf(w, "  %-34s no: wheelmq_timer_pending stopped at %.0f of %d\n", "all in the wheel", p.pendingSeen, r.send.acked)
	}
	if p.skipped > 0 {
		fmt.Fprintf(w, "  %-34s %.0f (wheelmq_timer_skipped_total: acknowledged timers the broker dropped)\n",
			"timers skipped by the broker", p.skipped)
	}
	if p.rss > 0 {
		note := ""
		if p.inProcess {
			note = fmt.Sprintf(" (in-process: includes the client; Go heap in use after GC %s)", mib(int64(p.goHeap)))
		}
		fmt.Fprintf(w, "  %-34s %s (peak %s)%s\n", "broker RSS with timers pending", mib(p.rss), mib(p.hwm), note)
	} else {
		fmt.Fprintf(w, "  %-34s unknown (give --pid)\n", "broker RSS with timers pending")
	}
	if p.diskKnown {
		fmt.Fprintf(w, "  %-34s %s allocated, %s (%s apparent)\n", "timer store (<data>/timer)",
			mib(p.timerDisk[0]), per(p.timerDisk[0]), per(p.timerDisk[1]))
		fmt.Fprintf(w, "  %-34s %s allocated, %s\n", "CommitLog (<data>/commitlog)", mib(p.commitDisk[0]), per(p.commitDisk[0]))
		fmt.Fprintf(w, "  %-34s %s allocated, %s\n", "consume queues", mib(p.cqDisk[0]), per(p.cqDisk[0]))
	} else {
		fmt.Fprintf(w, "  %-34s unknown (give --data)\n", "disk")
	}
	if p.restartErr != "" {
		fmt.Fprintf(w, "  %-34s %s\n", "restart", p.restartErr)
		return
	}
	fmt.Fprintf(w, "  %-34s %s took %.2f s\n", "stop", p.restart.how, p.restart.stopped.Seconds())
	fmt.Fprintf(w, "  %-34s %.3f s from start to the first acknowledged send\n", "restart", p.serveAfter.Seconds())
	if p.recovered > 0 {
		fmt.Fprintf(w, "  %-34s %.0f pending %.3f s after start (%d lost)\n", "timers after restart",
			p.pendingAfter, p.recovered.Seconds(), p.lost)
	}
	if p.rssAfter > 0 {
		fmt.Fprintf(w, "  %-34s %s\n", "broker RSS after restart", mib(p.rssAfter))
	}
}
