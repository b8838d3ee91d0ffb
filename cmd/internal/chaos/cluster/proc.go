// Package cluster starts the real processes of a replicated wheelmq
// deployment for the chaos test: three name servers with embedded raft
// controllers and broker groups of N replicas, every broker's links to the
// controllers, to its replicas and to clients through a chaos proxy, and
// the signals (SIGKILL, SIGSTOP/SIGCONT, restart on the same data dir) and
// partitions the nemeses apply. Role discovery reads the name servers'
// GET_BROKER_CLUSTER_INFO (brokerAddrs[0] is the master) and the
// controllers' CONTROLLER_GET_METADATA_INFO (1005: the raft leader).
package cluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one wheelmq process that can be killed, paused and restarted
// with the same arguments (and so the same ports and data dir).
type Proc struct {
	Name string
	bin  string
	args []string
	env  []string // added to the test's environment

	mu      sync.Mutex
	cmd     *exec.Cmd     // guarded by mu
	exited  chan struct{} // guarded by mu; closed when cmd has ended
	stopped bool          // guarded by mu: SIGSTOPped
	out     *tailBuffer
}

// tailBuffer keeps the last bytes of a process's stderr for failure
// messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.buf.Len() > 64<<10 {
		tail := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-32<<10:]...)
		b.buf.Reset()
		b.buf.Write(tail)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newProc prepares (does not start) a process; the test's cleanup kills it.
func newProc(t testing.TB, name, bin string, env []string, args ...string) *Proc {
	p := &Proc{Name: name, bin: bin, args: args, env: env, out: &tailBuffer{}}
	t.Cleanup(func() { p.Kill() })
	return p
}

// Start runs the process (again, after Kill) with its arguments.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s: still running", p.Name)
		}
	}
	cmd := exec.Command(p.bin, p.args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	var w io.Writer = p.out
	if os.Getenv("WHEELMQ_CHAOS_LOG") != "" {
		w = io.MultiWriter(os.Stderr, p.out)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start: %w", p.Name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // ends with the process (Kill in cleanup)
	p.cmd, p.exited, p.stopped = cmd, exited, false
	return nil
}

// Running reports whether the process has been started and not ended.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Exited is closed when the current process has ended (nil before Start).
func (p *Proc) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// signal sends sig to the running process.
func (p *Proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return fmt.Errorf("%s: not started", p.Name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.Name, sig, err)
	}
	if sig == syscall.SIGSTOP {
		p.stopped = true
	}
	if sig == syscall.SIGCONT {
		p.stopped = false
	}
	return nil
}

// Kill sends SIGKILL (a stopped process dies too) and waits up to 10 s for
// the process to end; it does nothing when none runs.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

// Pause sends SIGSTOP.
func (p *Proc) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT.
func (p *Proc) Resume() error { return p.signal(syscall.SIGCONT) }

// Paused reports whether the process was SIGSTOPped and not resumed.
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// Restart kills the process and starts it again on the same arguments.
func (p *Proc) Restart() error {
	p.Kill()
	return p.Start()
}

// Output is the tail of the process's output (every run so far).
func (p *Proc) Output() string { return p.out.String() }

// Supports reports whether `bin mode --help` mentions every one of flags
// (e.g. "--controller-listen"): the chaos test skips on a binary built
// before the replication parts landed.
func Supports(bin, mode string, flags ...string) (bool, string) {
	out, _ := exec.Command(bin, mode, "--help").CombinedOutput() // -h exits non-zero
	var missing []string
	for _, f := range flags {
		if !strings.Contains(string(out), strings.TrimLeft(f, "-")) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("`wheelmq %s --help` does not mention %s", mode, strings.Join(missing, ", "))
	}
	return true, ""
}
