package main

// The report of `wheelctl bench timer`: a table and the notes under it, or
// JSON.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// timerReport is the JSON form of the report.
type timerReport struct {
	Kind      string          `json:"kind"` // "timer"
	Size      int             `json:"size"`
	Conns     int             `json:"conns"`
	Window    int             `json:"window"`
	Queues    int             `json:"queues"`
	PullBatch int             `json:"pull_batch"`
	Security  string          `json:"security"` // security.describe
	Scenarios []timerScenario `json:"scenarios"`
}

// timerScenario is one scenario in JSON.
type timerScenario struct {
	Name          string   `json:"name"`
	Target        string   `json:"target"`
	Timers        int      `json:"timers"`
	Acknowledged  int64    `json:"acknowledged"`
	SendFailures  int64    `json:"send_failures"`
	BusyRetries   int64    `json:"busy_retries"`
	EnqueuePerSec float64  `json:"enqueue_per_sec"`
	Delivered     int      `json:"delivered,omitempty"`
	Early         int      `json:"early"` // at the consumer or written back before due
	Lateness      *latency `json:"lateness_ms,omitempty"`
	WrittenBack   *latency `json:"written_back_lateness_ms,omitempty"`
	Steady        *latency `json:"steady_lateness_ms,omitempty"`
	SteadyTimers  int      `json:"steady_timers,omitempty"`
	BurstLastS    float64  `json:"burst_last_delivery_s,omitempty"`
	PlainRates    []string `json:"baseline,omitempty"`
	Notes         string   `json:"notes"`
	OK            bool     `json:"ok"`
	Pending       *pending `json:"pending,omitempty"`
}

// pending is the pending scenario's figures in JSON.
type pending struct {
	WheelReadyS        float64 `json:"wheel_ready_s,omitempty"`
	PendingSeen        float64 `json:"pending_seen"`
	SkippedByBroker    float64 `json:"skipped_by_broker"`
	RSSBytes           int64   `json:"rss_bytes,omitempty"`
	PeakRSSBytes       int64   `json:"peak_rss_bytes,omitempty"`
	TimerDiskBytes     int64   `json:"timer_disk_bytes,omitempty"`
	CommitLogDiskBytes int64   `json:"commitlog_disk_bytes,omitempty"`
	RestartHow         string  `json:"restart_how,omitempty"`
	RestartError       string  `json:"restart_error,omitempty"`
	StopS              float64 `json:"stop_s,omitempty"`
	ServeAfterS        float64 `json:"serve_after_restart_s,omitempty"`
	RecoveredS         float64 `json:"recovered_s,omitempty"`
	PendingAfter       float64 `json:"pending_after_restart"`
	Lost               int64   `json:"lost"`
}

// latPtr is l for JSON, nil when it is empty.
func latPtr(l latency) *latency {
	if math.IsNaN(l.P50) {
		return nil
	}
	return &l
}

// toJSON converts a scenario result.
func (r scenarioResult) toJSON() timerScenario {
	s := timerScenario{Name: r.name, Target: r.target, Timers: r.n, Acknowledged: r.send.acked,
		SendFailures: r.send.failed, BusyRetries: r.send.busy, EnqueuePerSec: r.send.rate(),
		Delivered: r.delivered, Early: r.early + r.storeEarly, Lateness: latPtr(r.lat),
		WrittenBack: latPtr(r.storeLat), Steady: latPtr(r.steadyLat), SteadyTimers: r.steadyN,
		BurstLastS: r.burstLast.Seconds(), Notes: notes(r), OK: !r.failed()}
	if r.plainRate > 0 {
		s.PlainRates = []string{fmt.Sprintf("ack-only peer %.0f/s", r.nullRate), fmt.Sprintf("plain sends to wheelmq %.0f/s", r.plainRate)}
	}
	if p := r.pending; p != nil {
		s.Pending = &pending{WheelReadyS: p.wheelReady.Seconds(), PendingSeen: p.pendingSeen, SkippedByBroker: p.skipped,
			RSSBytes: p.rss, PeakRSSBytes: p.hwm, RestartHow: p.restart.how, RestartError: p.restartErr,
			StopS: p.restart.stopped.Seconds(), ServeAfterS: p.serveAfter.Seconds(), RecoveredS: p.recovered.Seconds(),
			PendingAfter: p.pendingAfter, Lost: p.lost}
		if p.diskKnown {
			s.Pending.TimerDiskBytes, s.Pending.CommitLogDiskBytes = p.timerDisk[0], p.commitDisk[0]
		}
		s.Notes = pendingNotes(r)
	}
	return s
}

// pendingNotes sums up the pending scenario in a few words.
func pendingNotes(r scenarioResult) string {
	if !r.failed() {
		return "ok"
	}
	var s []string
	if r.send.failed > 0 {
		s = append(s, fmt.Sprintf("%d send failures (%s)", r.send.failed, r.send.firstErr))
	}
	if r.pending.lost > 0 {
		s = append(s, fmt.Sprintf("%d lost across the restart", r.pending.lost))
	}
	if r.pending.skipped > 0 {
		s = append(s, fmt.Sprintf("%.0f skipped by the broker", r.pending.skipped))
	}
	return strings.Join(s, "; ")
}

// printTimerReport writes the report as JSON or as a table with notes.
func printTimerReport(w io.Writer, rs []scenarioResult, o timerOpts, asJSON bool) error {
	if asJSON {
		rep := timerReport{Kind: "timer", Size: o.send.size, Conns: o.send.conns, Window: o.send.window,
			Queues: o.send.queues, PullBatch: o.pullBatch, Security: o.send.sec.describe()}
		for _, r := range rs {
			rep.Scenarios = append(rep.Scenarios, r.toJSON())
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	client := o.client
	if client == "" {
		client = "lean"
	}
	fmt.Fprintf(w, "bench timer: %d-byte bodies, %s client: %d connections x %d in flight, %d queues, pulls of up to %d, %s\n",
		o.send.size, client, o.send.conns, o.send.window, o.send.queues, o.pullBatch, o.send.sec.describe())
	var delivery, pend []scenarioResult
	for _, r := range rs {
		if r.pending != nil {
			pend = append(pend, r)
		} else {
			delivery = append(delivery, r)
		}
	}
	if len(delivery) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%-8s\tTIMERS\tENQUEUE/S\tDELIVERED\tEARLY\tP50 MS\tP90 MS\tP99 MS\tMAX MS\tLAST AT\t  NOTES\n", "SCENARIO")
		for _, r := range delivery {
			last := "-"
			if r.name == "burst" {
				last = fmt.Sprintf("%.2f s", r.burstLast.Seconds())
			}
			fmt.Fprintf(tw, "%-8s\t%d\t%.0f\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t  %s\n", r.name, r.n, r.send.rate(),
				r.delivered, r.early+r.storeEarly, r.lat.P50, r.lat.P90, r.lat.P99, r.lat.Max, last, notes(r))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range delivery {
			fmt.Fprintf(w, "%s: written back (STORETIMESTAMP - due, ms resolution): p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms\n",
				r.name, r.storeLat.P50, r.storeLat.P90, r.storeLat.P99, r.storeLat.Max)
			if r.steadyN > 0 {
				fmt.Fprintf(w, "%s: %d timers due >= 1 s after the last send ack: lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
					r.name, r.steadyN, r.steadyLat.P50, r.steadyLat.P99, r.steadyLat.Max)
			}
			if r.plainRate > 0 {
				fmt.Fprintf(w, "%s: same client, %d plain messages: ack-only peer %.0f/s, wheelmq %.0f/s\n",
					r.name, r.n, r.nullRate, r.plainRate)
			}
		}
	}
	for _, r := range pend {
		printPending(w, r)
	}
	return nil
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
