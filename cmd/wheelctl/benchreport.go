package main

// What the benchmarks share: a latency recorder, the report printed as a
// table or JSON, and a progress bar on stderr when it is a terminal.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// latencies records operation latencies (µs) from many goroutines.
type latencies struct {
	mu sync.Mutex
	us []int64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.us = append(l.us, d.Microseconds())
	l.mu.Unlock()
}

// summary returns the percentiles in ms (nil when nothing was recorded).
func (l *latencies) summary() *latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.us) == 0 {
		return nil
	}
	s := percentiles(l.us)
	return &s
}

// benchResult is one target's figures.
type benchResult struct {
	Target     string   `json:"target"`
	Messages   int64    `json:"messages"` // acknowledged (produce) or received (consume)
	Errors     int64    `json:"errors"`   // failed sends, or messages not received
	FirstError string   `json:"first_error,omitempty"`
	ElapsedS   float64  `json:"elapsed_s"`
	MsgsPerSec float64  `json:"msgs_per_sec"`
	MBPerSec   float64  `json:"mb_per_sec"`
	Latency    *latency `json:"latency_ms,omitempty"` // send round trip (produce), end to end (consume); none for oneway
}

// setRate fills the rates from Messages, the elapsed time and the body size.
func (r *benchResult) setRate(elapsed time.Duration, size int) {
	r.ElapsedS = elapsed.Seconds()
	if r.ElapsedS > 0 {
		r.MsgsPerSec = float64(r.Messages) / r.ElapsedS
		r.MBPerSec = r.MsgsPerSec * float64(size) / 1e6
	}
}

// benchReport is what bench produce and bench consume print.
type benchReport struct {
	Kind      string  `json:"kind"` // produce or consume
	Broker    string  `json:"broker"`
	Client    string  `json:"client"`
	Mode      string  `json:"mode"`
	Size      int     `json:"size"`
	Producers int     `json:"producers"`
	Clients   int     `json:"clients"`
	Window    int     `json:"window,omitempty"`
	DurationS float64 `json:"duration_s,omitempty"`
	Count     int64   `json:"count,omitempty"`
	// Security is how the connections went: plaintext or TLS, signed or
	// not (security.describe; never a secret).
	Security string        `json:"security"`
	Results  []benchResult `json:"results"`
	// RatioToPeer is wheelmq's msg/s over the ack-only peer's (--peer).
	RatioToPeer *float64 `json:"ratio_to_peer,omitempty"`
}

// print writes the report as JSON or as a table.
func (r *benchReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	run := time.Duration(r.DurationS * float64(time.Second)).String()
	if r.Count > 0 {
		run = fmt.Sprintf("%d messages", r.Count)
	}
	fmt.Fprintf(w, "bench %s: %d-byte bodies, %d producer(s) on %d client(s), %s, %s, client %s, broker %s, %s\n",
		r.Kind, r.Size, r.Producers, r.Clients, r.Mode, run, r.Client, r.Broker, r.Security)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := len("TARGET")
	for _, res := range r.Results {
		width = max(width, len(res.Target))
	}
	fmt.Fprintf(tw, "%-*s\tMESSAGES\tERRORS\tMSG/S\tMB/S\tP50 MS\tP90 MS\tP99 MS\tMAX MS\t\n", width, "TARGET")
	for _, res := range r.Results {
		lat := "-\t-\t-\t-"
		if l := res.Latency; l != nil {
			lat = fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.2f", l.P50, l.P90, l.P99, l.Max)
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%.0f\t%.2f\t%s\t\n", width, res.Target, res.Messages, res.Errors, res.MsgsPerSec, res.MBPerSec, lat)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.RatioToPeer != nil {
		fmt.Fprintf(w, "wheelmq / ack-only peer: %.2f\n", *r.RatioToPeer)
	}
	for _, res := range r.Results {
		if res.FirstError != "" {
			fmt.Fprintf(w, "%s: first error: %s\n", res.Target, oneLine(res.FirstError))
		}
	}
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress draws a bar on a terminal while a benchmark runs: towards a
// count when there is one, else towards the duration.
type progress struct {
	bar  *progressbar.ProgressBar
	stop chan struct{}
	done chan struct{}
}

// startProgress starts a bar on w when w is a terminal (nil otherwise;
// a nil *progress is a no-op). count reads the work done so far.
func startProgress(w io.Writer, label string, total int64, dur time.Duration, count func() int64) *progress {
	if !isTerminal(w) {
		return nil
	}
	byCount := total > 0
	max := total
	if !byCount {
		max = int64(math.Ceil(dur.Seconds() * 10)) // tenths of a second
	}
	opts := []progressbar.Option{progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
		progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetPredictTime(byCount)}
	if byCount {
		opts = append(opts, progressbar.OptionShowCount())
	}
	p := &progress{stop: make(chan struct{}), done: make(chan struct{}), bar: progressbar.NewOptions64(max, opts...)}
	go func() {
		defer close(p.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				n := count()
				el := time.Since(start)
				p.bar.Describe(fmt.Sprintf("%s %d msgs, %.0f/s", label, n, float64(n)/el.Seconds()))
				if byCount {
					_ = p.bar.Set64(min(n, max))
				} else {
					_ = p.bar.Set64(min(int64(el.Seconds()*10), max))
				}
			}
		}
	}()
	return p
}

// finish removes the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	_ = p.bar.Clear()
}
