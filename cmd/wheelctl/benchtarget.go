package main

// The broker under test of `wheelctl bench-timer`: an in-process node (the
// default), a wheelmq binary this command spawns (--spawn), or an external
// broker (--broker / --namesrv, with --pid, --data and --metrics to read
// its memory, disk and timer gauges).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/pipeline"
	"github.com/wheelmq/wheelmq/actors/writer"
	"github.com/wheelmq/wheelmq/cmd/internal/process"
	"github.com/wheelmq/wheelmq/netloop/portres"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// errNoRestart means the target cannot be restarted by this command.
var errNoRestart = errors.New("restart not supported for an external broker (use --spawn or the in-process default)")

// benchTarget is the broker under test.
type benchTarget interface {
	// broker is the broker's remoting address.
	broker() string
	// namesrv is a name server that routes to the broker ("": none known).
	namesrv() string
	// describe names the target for the report.
	describe() string
	// pid is the broker's process id (0: unknown).
	pid() int
	// dataDir is the broker's store root ("": unknown).
	dataDir() string
	// metric reads the sum of every series of a metric, e.g.
	// wheelmq_timer_pending (ok false: not available).
	metric(name string) (float64, bool)
	// restart stops the broker (kill: SIGKILL where possible) and starts it
	// again on the same store. It returns how long the stop took, how it
	// was done, and when the new broker was started (it may not serve yet).
	restart(kill bool) (r restartInfo, err error)
	// close stops the broker if this command started it.
	close()
}

// restartInfo describes a restart.
type restartInfo struct {
	stopped   time.Duration // signal or Stop until the old broker was gone
	how       string
	startedAt time.Time // just before the new broker was started
}

// targetOpts selects and configures the target.
type targetOpts struct {
	namesrv, brokerAddr string
	pidFlag             int
	data                string
	metricsURL          string
	spawn               string
	flush               string
	segmentSize         int64
	keep                bool
	log                 zerolog.Logger
	sec                 *security // credentials and TLS of the command's connections
}

// openTarget builds the target the flags ask for.
func openTarget(ctx context.Context, o targetOpts) (benchTarget, error) {
	switch {
	case o.spawn != "":
		return startSpawned(ctx, o)
	case o.brokerAddr != "" || o.namesrv != "":
		addr := o.brokerAddr
		if addr == "" {
			var err error
			if addr, err = resolveBroker(ctx, o.namesrv, o.sec.clientOptions()); err != nil {
				return nil, err
			}
		}
		return &externalTarget{addr: addr, ns: o.namesrv, p: o.pidFlag, data: o.data, metrics: o.metricsURL}, nil
	default:
		return startInProcess(o)
	}
}

// inProcessTarget is a wheelmq node in this process.
type inProcessTarget struct {
	cfg  process.Config
	n    *process.Node
	dir  string
	keep bool
}

func startInProcess(o targetOpts) (*inProcessTarget, error) {
	mode, err := writer.ParseFlushMode(o.flush)
	if err != nil {
		return nil, err
	}
	dir := o.data
	if dir == "" {
		if dir, err = os.MkdirTemp("", "wheelctl-bench-timer-"); err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
	}
	bc := pipeline.DefaultConfig()
	bc.DataDir, bc.Listen, bc.Flush, bc.Logger = dir, "127.0.0.1:0", mode, o.log
	bc.SegmentSize = o.segmentSize
	t := &inProcessTarget{cfg: process.Config{Broker: bc, RunBroker: true, NamesrvListen: "127.0.0.1:0", Logger: o.log},
		dir: dir, keep: o.keep || o.data != ""}
	if t.n, err = process.Start(t.cfg); err != nil {
		return nil, fmt.Errorf("start wheelmq in-process: %w", err)
	}
	return t, nil
}

func (t *inProcessTarget) broker() string  { return t.n.BrokerAddr() }
func (t *inProcessTarget) namesrv() string { return t.n.NamesrvAddr() }
func (t *inProcessTarget) describe() string {
	return "in-process wheelmq (RSS includes the benchmark client)"
}
func (t *inProcessTarget) pid() int        { return os.Getpid() }
func (t *inProcessTarget) dataDir() string { return t.dir }

func (t *inProcessTarget) metric(name string) (float64, bool) {
	mfs, err := t.n.Registry().Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
		return sum, true
	}
	return 0, false
}

func (t *inProcessTarget) restart(bool) (restartInfo, error) {
	start := time.Now()
	if err := t.n.Stop(context.Background()); err != nil {
		return restartInfo{}, fmt.Errorf("stop in-process wheelmq: %w", err)
	}
	ri := restartInfo{stopped: time.Since(start), how: "graceful Stop (in-process)", startedAt: time.Now()}
	n, err := process.Start(t.cfg)
	if err != nil {
		return ri, fmt.Errorf("restart in-process wheelmq: %w", err)
	}
	t.n = n
	return ri, nil
}

func (t *inProcessTarget) close() {
	_ = t.n.Stop(context.Background())
	if !t.keep {
		_ = os.RemoveAll(t.dir)
	}
}

// spawnedTarget is a wheelmq binary started by this command.
type spawnedTarget struct {
	bin, dir, addr, nsAddr, metrics string
	cmd                             *exec.Cmd
	keep                            bool
	ports                           portHolder // the process's ports, held until close
}

func startSpawned(ctx context.Context, o targetOpts) (*spawnedTarget, error) {
	dir := o.data
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "wheelctl-bench-timer-"); err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
	}
	t := &spawnedTarget{bin: o.spawn, dir: dir, keep: o.keep || o.data != ""}
	ports := make([]string, 3)
	for i := range ports {
		if ports[i], err = t.ports.take(); err != nil {
			return nil, err
		}
	}
	t.addr, t.nsAddr, t.metrics = ports[0], ports[1], ports[2]
	if err := t.exec(); err != nil {
		return nil, err
	}
	if err := waitServing(ctx, t.addr, 30*time.Second); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// exec starts the binary on the target's ports and directory.
func (t *spawnedTarget) exec() error {
	t.cmd = exec.Command(t.bin, "--data", t.dir, "--listen", t.addr, "--namesrv-listen", t.nsAddr,
		"--metrics-listen", t.metrics, "--grpc-listen=", "--log-level", "warn", "--log-format", "json")
	t.cmd.Stderr = os.Stderr
	if err := t.cmd.Start(); err != nil {
		return fmt.Errorf("spawn %s: %w", t.bin, err)
	}
	return nil
}

func (t *spawnedTarget) broker() string   { return t.addr }
func (t *spawnedTarget) namesrv() string  { return t.nsAddr }
func (t *spawnedTarget) describe() string { return "wheelmq process " + t.bin + " (spawned)" }
func (t *spawnedTarget) pid() int         { return t.cmd.Process.Pid }
func (t *spawnedTarget) dataDir() string  { return t.dir }
func (t *spawnedTarget) metric(name string) (float64, bool) {
	return scrapeMetric("http://"+t.metrics+"/metrics", name)
}

func (t *spawnedTarget) restart(kill bool) (restartInfo, error) {
	start := time.Now()
	ri := restartInfo{how: "SIGKILL"}
	sig := syscall.SIGKILL
	if !kill {
		ri.how, sig = "SIGTERM (graceful)", syscall.SIGTERM
	}
	if err := t.cmd.Process.Signal(sig); err != nil {
		return ri, fmt.Errorf("signal wheelmq: %w", err)
	}
	_ = t.cmd.Wait()
	ri.stopped, ri.startedAt = time.Since(start), time.Now()
	return ri, t.exec()
}

func (t *spawnedTarget) close() {
	if t.cmd != nil && t.cmd.Process != nil {
		_ = t.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = t.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = t.cmd.Process.Kill()
			<-done
		}
	}
	t.ports.release()
	if !t.keep {
		_ = os.RemoveAll(t.dir)
	}
}

// externalTarget is a broker someone else runs.
type externalTarget struct {
	addr, ns, data, metrics string
	p                       int
}

func (t *externalTarget) broker() string                    { return t.addr }
func (t *externalTarget) namesrv() string                   { return t.ns }
func (t *externalTarget) describe() string                  { return "external broker " + t.addr }
func (t *externalTarget) pid() int                          { return t.p }
func (t *externalTarget) dataDir() string                   { return t.data }
func (t *externalTarget) restart(bool) (restartInfo, error) { return restartInfo{}, errNoRestart }
func (t *externalTarget) close()                            {}
func (t *externalTarget) metric(name string) (float64, bool) {
	if t.metrics == "" {
		return 0, false
	}
	return scrapeMetric(t.metrics, name)
}

// portHolder holds the loopback ports of the processes a benchmark spawns
// for as long as they may run (package portres): no other bind or
// connection on the machine takes one between its pick and the process's
// bind, or while the process restarts.
type portHolder struct{ held []*portres.Reservation }

// take reserves a port and returns its address.
func (h *portHolder) take() (string, error) {
	r, err := portres.Reserve()
	if err != nil {
		return "", fmt.Errorf("reserve a loopback port: %w", err)
	}
	h.held = append(h.held, r)
	return r.Addr(), nil
}

// release frees every port taken (once their processes have exited).
func (h *portHolder) release() {
	for _, r := range h.held {
		_ = r.Close()
	}
	h.held = nil
}

// waitServing waits until addr accepts connections.
func waitServing(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("broker %s not serving after %s: %w", addr, limit, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scrapeMetric reads a metric from a Prometheus text endpoint (see
// metricValue).
func scrapeMetric(url, name string) (float64, bool) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	return metricValue(b, name)
}

// metricValue sums the samples of metric name (with or without labels)
// in Prometheus text exposition; ok is false when there is none.
func metricValue(text []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" {
			continue
		}
		switch rest[0] {
		case ' ':
		case '{':
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			rest = rest[end+1:]
		default:
			continue // a longer name
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		sum, found = sum+v, true
	}
	return sum, found
}

// procMemory reads VmRSS and VmHWM (bytes) of pid.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		kb, _ := strconv.ParseInt(f[0], 10, 64)
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

// diskUsage sums the allocated bytes (st_blocks) and the apparent sizes of
// the files under dir.
func diskUsage(dir string) (allocated, apparent int64, err error) {
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		apparent += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return allocated, apparent, nil
}

// firstSend sends plain messages to topic until one is acknowledged,
// redialling while the broker is not up.
func firstSend(ctx context.Context, addr, topic string, limit time.Duration, opts remoting.ClientOptions) error {
	deadline := time.Now().Add(limit)
	body := []byte("restart probe")
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c, err := dialLean(ctx, addr, 4, opts)
		if err != nil {
			last = err
			time.Sleep(2 * time.Millisecond)
			continue
		}
		s := newTimerSender("wheelctl_bench_timer", topic, "broker-a", remoting.SerializeRocketMQ, benchUniq())
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := c.Call(callCtx, s.build(0, 0, body))
		cancel()
		c.Close()
		if err == nil && resp.Code == remoting.Success {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
		}
		last = err
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("no send acknowledged within %s: %w", limit, last)
}
