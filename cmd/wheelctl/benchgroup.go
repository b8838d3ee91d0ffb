package main

// Spawned broker groups for the replicated-send benchmarks (issue 17): a
// wheelmq binary run as separate processes, either one name server and one
// broker with --replication none (the baseline), or three name servers
// with raft controllers and N brokers of one group with --replication
// controller. Every process gets its own loopback ports and directory
// under one temporary root; its stderr goes to <root>/<name>.log.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// groupSpec says which processes to start.
type groupSpec struct {
	bin       string // wheelmq binary
	replicas  int    // 1: a single broker, --replication none; >= 2: a replicated group
	minInSync int    // --min-in-sync-replicas of a group
	flush     string // --flush of every broker
	pprof     bool   // serve /debug/pprof on the brokers' metrics ports
	keep      bool   // keep the directory (logs, stores) after close
	// replicaRoot, when set, holds the replicas' stores (another disk, or
	// tmpfs to take their fsync out of the measurement).
	replicaRoot string
}

// describe names the target in a report.
func (s groupSpec) describe() string {
	if s.replicas <= 1 {
		return fmt.Sprintf("single broker, --replication none, %s flush (spawned %s)", s.flush, s.bin)
	}
	return fmt.Sprintf("group of %d, --min-in-sync-replicas %d, %s flush, 3 name servers with controllers (spawned %s)",
		s.replicas, s.minInSync, s.flush, s.bin)
}

// spawnedProc is one process of a group.
type spawnedProc struct {
	name    string
	cmd     *exec.Cmd
	log     *os.File
	addr    string // remoting address
	metrics string // HTTP address of /metrics and /healthz ("": none)
}

// procGroup is a running spawned group.
type procGroup struct {
	spec     groupSpec
	dir      string
	repDir   string // the replicas' stores ("": under dir)
	namesrvs []*spawnedProc
	brokers  []*spawnedProc
	ports    portHolder // every process's ports, held until close
}

// groupStartLimit bounds the start of a group: ports, controller
// election, the master's promotion, every replica in the sync-state set.
const groupStartLimit = 60 * time.Second

// startProcGroup starts the processes spec asks for and returns once the
// master serves and (in a group) every broker is in its sync-state set.
func startProcGroup(ctx context.Context, spec groupSpec) (*procGroup, error) {
	if spec.bin == "" {
		return nil, usagef("no wheelmq binary: give --wheelmq (e.g. bin/wheelmq from 'task build')")
	}
	if _, err := os.Stat(spec.bin); err != nil {
		return nil, fmt.Errorf("wheelmq binary: %w", err)
	}
	if spec.replicas >= 2 && (spec.minInSync < 1 || spec.minInSync > spec.replicas) {
		return nil, usagef("--min-in-sync %d: want 1 to --replicas (%d)", spec.minInSync, spec.replicas)
	}
	dir, err := os.MkdirTemp("", "wheelctl-bench-group-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	g := &procGroup{spec: spec, dir: dir}
	if spec.replicaRoot != "" {
		if g.repDir, err = os.MkdirTemp(spec.replicaRoot, "wheelctl-bench-replicas-"); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("replica dir: %w", err)
		}
	}
	if err := g.start(ctx); err != nil {
		g.spec.keep = true // the logs say why
		g.close()
		return nil, fmt.Errorf("%w (logs in %s)", err, dir)
	}
	return g, nil
}

func (g *procGroup) start(ctx context.Context) error {
	deadline := time.Now().Add(groupStartLimit)
	nNS := 1
	if g.spec.replicas >= 2 {
		nNS = 3
	}
	ctlPorts := make([]string, nNS)
	for i := range nNS {
		addr, err := g.ports.take()
		if err != nil {
			return err
		}
		ctl, err := g.ports.take()
		if err != nil {
			return err
		}
		ctlPorts[i] = ctl
		g.namesrvs = append(g.namesrvs, &spawnedProc{name: fmt.Sprintf("ns%d", i+1), addr: addr})
	}
	for i, ns := range g.namesrvs {
		args := []string{"namesrv", "--listen", ns.addr, "--data", filepath.Join(g.dir, ns.name), "--metrics-listen", ""}
		if nNS > 1 {
			args = append(args, "--controller-listen", ctlPorts[i], "--controller-peers", strings.Join(ctlPorts, ";"))
		}
		if err := g.exec(ns, args); err != nil {
			return err
		}
	}
	for _, ns := range g.namesrvs {
		if err := waitServing(ctx, ns.addr, time.Until(deadline)); err != nil {
			return fmt.Errorf("name server %s: %w", ns.name, err)
		}
	}
	nsList := g.namesrvList()
	for i := range max(g.spec.replicas, 1) {
		b := &spawnedProc{name: fmt.Sprintf("broker%d", i+1)}
		var err error
		if b.addr, err = g.ports.take(); err != nil {
			return err
		}
		if b.metrics, err = g.ports.take(); err != nil {
			return err
		}
		data := filepath.Join(g.dir, b.name)
		if i > 0 && g.repDir != "" {
			data = filepath.Join(g.repDir, b.name)
		}
		args := []string{"broker", "--namesrv", nsList, "--broker-name", "broker-a", "--listen", b.addr,
			"--metrics-listen", b.metrics, "--grpc-listen=", "--flush", g.spec.flush, "--data", data}
		if g.spec.pprof {
			args = append(args, "--pprof")
		}
		if g.spec.replicas >= 2 {
			ha, err := g.ports.take()
			if err != nil {
				return err
			}
			args = append(args, "--replication", "controller", "--ha-listen", ha,
				"--min-in-sync-replicas", strconv.Itoa(g.spec.minInSync))
		} else {
			args = append(args, "--replication", "none")
		}
		g.brokers = append(g.brokers, b)
		if err := g.exec(b, args); err != nil {
			return err
		}
		if err := waitServing(ctx, b.addr, time.Until(deadline)); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		if i == 0 && g.spec.replicas >= 2 {
			// The first broker to register becomes the master: wait for
			// it before the others start, so the master is broker1.
			if err := g.waitRole(ctx, b, 1, deadline); err != nil {
				return err
			}
		}
	}
	if g.spec.replicas >= 2 {
		return g.waitRole(ctx, g.brokers[0], g.spec.replicas, deadline)
	}
	return nil
}

// exec starts one process with its stderr and stdout in <dir>/<name>.log.
func (g *procGroup) exec(p *spawnedProc, args []string) error {
	args = append(args, "--log-level", "warn", "--log-format", "json")
	f, err := os.Create(filepath.Join(g.dir, p.name+".log"))
	if err != nil {
		return fmt.Errorf("log of %s: %w", p.name, err)
	}
	p.log = f
	p.cmd = exec.Command(g.spec.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("spawn %s %s: %w", g.spec.bin, p.name, err)
	}
	return nil
}

// syncSetRe reads the sync-state set from a /healthz role line.
var syncSetRe = regexp.MustCompile(`role: master .*sync_state_set=\[([0-9 ]*)\]`)

// waitRole waits until b's /healthz says it is master with at least
// inSync members in its sync-state set.
func (g *procGroup) waitRole(ctx context.Context, b *spawnedProc, inSync int, deadline time.Time) error {
	client := http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := client.Get("http://" + b.metrics + "/healthz"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = strings.TrimSpace(string(body))
			if m := syncSetRe.FindStringSubmatch(last); m != nil && len(strings.Fields(m[1])) >= inSync {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not master with %d in sync within %s: last /healthz %q", b.name, inSync, groupStartLimit, last)
}

// namesrvList is the ';'-separated name-server list for clients.
func (g *procGroup) namesrvList() string {
	addrs := make([]string, len(g.namesrvs))
	for i, ns := range g.namesrvs {
		addrs[i] = ns.addr
	}
	return strings.Join(addrs, ";")
}

// masterMetrics is the master's (broker1's) metrics address.
func (g *procGroup) masterMetrics() string { return g.brokers[0].metrics }

// profileMaster fetches a CPU profile of the master (needs spec.pprof)
// for d into path.
func (g *procGroup) profileMaster(ctx context.Context, d time.Duration, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", g.masterMetrics(), max(int(d.Seconds()), 1))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("master profile: %w", err)
	}
	resp, err := (&http.Client{Timeout: d + 30*time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("master profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("master profile: %s (is --pprof on?)", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("master profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("master profile: %w", err)
	}
	return f.Close()
}

// close stops every process (SIGTERM, then SIGKILL after 30 s), brokers
// first, and removes the directory unless spec.keep.
func (g *procGroup) close() {
	procs := append(append([]*spawnedProc{}, g.brokers...), g.namesrvs...)
	for _, p := range procs {
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range procs {
		if p.cmd == nil || p.cmd.Process == nil {
			continue
		}
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		if p.log != nil {
			_ = p.log.Close()
		}
	}
	g.ports.release()
	if !g.spec.keep {
		_ = os.RemoveAll(g.dir)
		if g.repDir != "" {
			_ = os.RemoveAll(g.repDir)
		}
	}
}

// groupCPU is CPU time (user + system) spent by a group's processes and
// by this one.
type groupCPU struct {
	client, master, replicas, namesrvs time.Duration
}

// cpu reads the CPU time of every process of g and of this process so
// far (/proc/<pid>/stat; zero where unreadable).
func (g *procGroup) cpu() groupCPU {
	var c groupCPU
	c.client = procCPU(os.Getpid())
	for i, b := range g.brokers {
		if i == 0 {
			c.master = procCPU(b.cmd.Process.Pid)
		} else {
			c.replicas += procCPU(b.cmd.Process.Pid)
		}
	}
	for _, ns := range g.namesrvs {
		c.namesrvs += procCPU(ns.cmd.Process.Pid)
	}
	return c
}

// sub is c - o.
func (c groupCPU) sub(o groupCPU) groupCPU {
	return groupCPU{c.client - o.client, c.master - o.master, c.replicas - o.replicas, c.namesrvs - o.namesrvs}
}

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat times
// (100 on every Linux platform Go supports).
const clockTick = 10 * time.Millisecond

// procCPU is utime + stime of pid.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count fields after ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * clockTick
}
