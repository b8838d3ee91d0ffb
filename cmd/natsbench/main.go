// Command nats compares wheelmq with NATS JetStream on one machine in one
// run (task bench:compare:nats): it builds wheelmq from this repository and
// nats-server from the module proxy (the version in this module's go.mod),
// starts both on loopback with their stores in a temporary directory, and
// measures, with 256-byte bodies by default:
//
//   - sync publishes from one publisher (each waits for its acknowledgement);
//   - async publishes with a window of publishes in flight;
//   - timer enqueue: wheelmq timer messages due in up to an hour, against
//     NATS scheduled messages (Nats-Schedule "@at", NATS 2.12+; one schedule
//     subject per message, as NATS keeps one schedule per subject).
//
// wheelmq is driven by its native producer (cmd/internal/client/producer) and, for
// reference, by the official RocketMQ Go client; NATS by nats.go's
// jetstream API. Each measurement runs for --duration after a warm-up, the
// systems take turns, and the table shows the medians of --rounds rounds
// with wheelmq/NATS ratios. Both servers are stopped and their stores
// removed at the end.
//
// This is a separate module so that the main go.mod does not pull NATS.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// options are the command-line flags.
type options struct {
	duration, warmup time.Duration
	rounds           int
	size, window     int
	root             string
	wheelmqFlags     string
	official, keep   bool
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measurement")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each measurement (not counted)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; the table shows medians")
	flag.IntVar(&o.size, "size", 256, "message body bytes")
	flag.IntVar(&o.window, "window", 256, "async: publishes in flight")
	flag.StringVar(&o.root, "root", "", "wheelmq repository root (default: found from the working directory)")
	flag.StringVar(&o.wheelmqFlags, "wheelmq-flags", "", "extra wheelmq flags, space-separated (e.g. --index=false)")
	flag.BoolVar(&o.official, "official", true, "also measure the official RocketMQ Go client against wheelmq")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binaries, stores, server logs)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:compare:nats:", err)
		os.Exit(1)
	}
}

// findRoot walks up from the working directory to wheelmq's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(b), "module github.com/wheelmq/wheelmq\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no wheelmq go.mod above the working directory: give --root")
		}
		dir = parent
	}
}

func run(ctx context.Context, o options, out, progress io.Writer) error {
	if o.rounds < 1 || o.size < 1 || o.window < 1 || o.duration <= 0 {
		return errors.New("--rounds, --size, --window and --duration must be positive")
	}
	if o.root == "" {
		root, err := findRoot()
		if err != nil {
			return err
		}
		o.root = root
	}
	dir, err := os.MkdirTemp("", "wheelmq-vs-nats-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(progress, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintln(progress, "building wheelmq and nats-server ...")
	wmBin, natsBin, err := build(ctx, o.root, dir)
	if err != nil {
		return err
	}
	natsVersion, _ := exec.Command(natsBin, "--version").Output()
	wm, err := startWheelmq(ctx, wmBin, dir, strings.Fields(o.wheelmqFlags)...)
	if err != nil {
		return err
	}
	defer wm.stop()
	ns, err := startNATS(ctx, natsBin, dir)
	if err != nil {
		return err
	}
	defer ns.stop()
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := createTopic(setupCtx, wm.broker, wm.namesrv); err != nil {
		return err
	}
	native, err := newNative(wm.namesrv)
	if err != nil {
		return err
	}
	defer native.Close()
	nc, err := newNATS(setupCtx, ns.url, o.window)
	if err != nil {
		return err
	}
	defer nc.Close()
	systems := []*system{{name: "wheelmq", pub: native, pid: wm.cmd.Process.Pid}, {name: "nats", pub: nc, pid: ns.cmd.Process.Pid}}
	if o.official {
		official, err := newOfficial(wm.namesrv)
		if err != nil {
			return err
		}
		defer official.Close()
		systems = append(systems, &system{name: "official", pub: official, pid: wm.cmd.Process.Pid})
	}
	m := machine{loadBefore: loadAvg(), natsVersion: strings.TrimSpace(string(natsVersion)), wheelmqFlags: o.wheelmqFlags}
	res, err := measure(ctx, o, systems, progress)
	if err != nil {
		return err
	}
	m.loadAfter = loadAvg()
	report(out, o, m, res)
	return nil
}

// system is one client of one server under test.
type system struct {
	name string
	pub  publisher
	pid  int // the server's process
}

// workloads are the measurements, in order.
var workloads = []string{"sync", "async", "timer"}

// result is one measurement.
type result struct {
	acked, failed     int64
	elapsed           time.Duration
	p50, p99          time.Duration // sync only
	serverCPU, cliCPU time.Duration // CPU time the server process and this client process used
}

// perMsg returns d per acknowledged message.
func (r result) perMsg(d time.Duration) time.Duration {
	if r.acked == 0 {
		return 0
	}
	return d / time.Duration(r.acked)
}

func (r result) rate() float64 { return float64(r.acked) / r.elapsed.Seconds() }

// results holds every round's result per workload and system.
type results map[string]map[string][]result

// measure runs every workload on every system for o.rounds rounds, the
// systems taking turns in a rotating order.
func measure(ctx context.Context, o options, systems []*system, progress io.Writer) (results, error) {
	body := make([]byte, o.size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	res := results{}
	for round := range o.rounds {
		for _, w := range workloads {
			if res[w] == nil {
				res[w] = map[string][]result{}
			}
			for k := range systems {
				s := systems[(k+round)%len(systems)]
				if _, err := runOne(ctx, o, s, w, body, o.warmup); err != nil {
					return nil, fmt.Errorf("%s %s warm-up: %w", s.name, w, err)
				}
				r, err := runOne(ctx, o, s, w, body, o.duration)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", s.name, w, err)
				}
				res[w][s.name] = append(res[w][s.name], r)
				fmt.Fprintf(progress, "round %d  %-6s %-9s %10.0f msg/s  server %5.1f µs/msg  client %5.1f µs/msg  (%d failed)\n",
					round+1, w, s.name, r.rate(), micros(r.perMsg(r.serverCPU)), micros(r.perMsg(r.cliCPU)), r.failed)
			}
		}
	}
	return res, nil
}

// runOne runs workload w on s for d.
func runOne(ctx context.Context, o options, s *system, w string, body []byte, d time.Duration) (result, error) {
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	srv0, cli0 := processCPU(s.pid), selfCPU()
	var r result
	var err error
	if w == "sync" {
		r, err = runSync(ctx, s.pub, body, d)
	} else {
		r, err = runAsync(ctx, s.pub, body, o.window, d, w == "timer")
	}
	r.serverCPU, r.cliCPU = processCPU(s.pid)-srv0, selfCPU()-cli0
	return r, err
}

// runSync publishes one message at a time for d.
func runSync(ctx context.Context, p publisher, body []byte, d time.Duration) (result, error) {
	var r result
	lat := make([]time.Duration, 0, 1<<16)
	start := time.Now()
	end := start.Add(d)
	for now := start; now.Before(end); {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.Sync(sctx, body)
		cancel()
		t := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.failed++
		} else {
			r.acked++
			lat = append(lat, t.Sub(now))
		}
		now = t
	}
	r.elapsed = time.Since(start)
	if r.acked == 0 {
		return r, errors.New("no publish acknowledged")
	}
	slices.Sort(lat)
	r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	return r, nil
}

// runAsync publishes with up to window publishes in flight for d, then
// waits for the last acknowledgements; with timer, each message is due
// within the hour after the run starts.
func runAsync(ctx context.Context, p publisher, body []byte, window int, d time.Duration, timer bool) (result, error) {
	var acked, failed atomic.Int64
	sem := make(chan struct{}, window)
	sess, err := p.StartAsync(func(err error) {
		if err != nil {
			failed.Add(1)
		} else {
			acked.Add(1)
		}
		<-sem
	})
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	end := start.Add(d)
	base := start.Add(time.Hour)
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		var at time.Time
		if timer {
			at = base.Add(time.Duration(i%3600) * time.Second)
		}
		if err := sess.Publish(body, at); err != nil {
			<-sem
			failed.Add(1)
		}
	}
	drain := time.After(30 * time.Second)
fill: // every slot back: nothing in flight
	for range window {
		select {
		case sem <- struct{}{}:
		case <-drain:
			break fill
		}
	}
	r := result{acked: acked.Load(), failed: failed.Load(), elapsed: time.Since(start)}
	sess.Close()
	if r.acked == 0 {
		return r, errors.New("no publish acknowledged")
	}
	return r, ctx.Err()
}

// machine describes where the run happened.
type machine struct {
	loadBefore, loadAfter string
	natsVersion           string
	wheelmqFlags          string
}

// loadAvg returns /proc/loadavg's 1, 5 and 15 minute averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// moduleVersion returns the version of a dependency this binary was built
// with.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "?"
}
