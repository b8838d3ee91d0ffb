package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProcSignals drives a real process (sleep) through SIGSTOP, SIGCONT,
// SIGKILL and a restart.
func TestProcSignals(t *testing.T) {
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p := newProc(t, "sleeper", bin, nil, "60")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err == nil {
		t.Fatal("a second Start of a running process succeeded")
	}
	if err := p.Pause(); err != nil || !p.Paused() || !p.Running() {
		t.Fatalf("pause: %v paused %v running %v", err, p.Paused(), p.Running())
	}
	if err := p.Resume(); err != nil || p.Paused() {
		t.Fatalf("resume: %v", err)
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	first := p.Exited()
	p.Kill() // a stopped process dies too
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("killed process did not exit")
	}
	if p.Running() {
		t.Fatal("running after Kill")
	}
	if err := p.Restart(); err != nil || !p.Running() || p.Paused() {
		t.Fatalf("restart: %v running %v", err, p.Running())
	}
}

func TestSupports(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake")
	body := "#!/bin/sh\necho '  -controller-listen string' >&2\nexit 2\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, why := Supports(script, "namesrv", "--controller-listen"); !ok {
		t.Fatalf("flag present, reported missing: %s", why)
	}
	ok, why := Supports(script, "namesrv", NamesrvFlags...)
	if ok || !strings.Contains(why, "--controller-peers") {
		t.Fatalf("missing flag not reported: %v %q", ok, why)
	}
}
