package main

// The two servers under test, each its own process on loopback: wheelmq
// built from this repository, nats-server built from the module proxy at
// the version go.mod pins.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wheelmq/wheelmq/netloop/portres"
)

// server is a running process.
type server struct {
	name  string
	cmd   *exec.Cmd
	log   string
	ports []*portres.Reservation // its ports, held until it has stopped
}

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (s *server) stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	releasePorts(s.ports)
	s.ports = nil
}

// logTail returns the last bytes of the server's log, for error messages.
func (s *server) logTail() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return ""
	}
	return string(b[max(0, len(b)-2000):])
}

// build compiles the wheelmq binary from the repository root and the
// nats-server binary from this module (pinned by go.mod) into dir.
func build(ctx context.Context, root, dir string) (wheelmq, nats string, err error) {
	wheelmq, nats = filepath.Join(dir, "wheelmq"), filepath.Join(dir, "nats-server")
	for _, b := range []struct{ dir, out, pkg string }{
		{root, wheelmq, "./cmd/wheelmq"},
		{filepath.Join(root, "cmd", "natsbench"), nats, "github.com/nats-io/nats-server/v2"},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
		}
	}
	return wheelmq, nats, nil
}

// reservePorts holds n loopback ports (package portres) for a server
// about to start: no other bind or connection takes one before the server
// binds it. The server releases them when it stops.
func reservePorts(n int) ([]*portres.Reservation, error) {
	var held []*portres.Reservation
	for range n {
		r, err := portres.Reserve()
		if err != nil {
			releasePorts(held)
			return nil, fmt.Errorf("reserve a loopback port: %w", err)
		}
		held = append(held, r)
	}
	return held, nil
}

// releasePorts closes the reservations.
func releasePorts(held []*portres.Reservation) {
	for _, r := range held {
		_ = r.Close()
	}
}

// start runs bin with args on the ports held (released when it stops, or
// here if it does not start), its output into a log file in dir, and waits
// until GET url answers 200.
func start(ctx context.Context, name, dir, url, bin string, ports []*portres.Reservation, args ...string) (*server, error) {
	s := &server{name: name, log: filepath.Join(dir, name+".log"), ports: ports}
	logf, err := os.Create(s.log)
	if err != nil {
		releasePorts(ports)
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	defer logf.Close()
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		releasePorts(ports)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("%s not ready at %s within 30 s: %w\n%s", name, url,
				errors.Join(err, ctx.Err()), s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wheelmqServer is a wheelmq broker with its embedded name server.
type wheelmqServer struct {
	*server
	namesrv, broker string
}

// startWheelmq runs wheelmq with async flush (acknowledged once in the page
// cache, fsync every 500 ms), a store under dir and the extra flags.
func startWheelmq(ctx context.Context, bin, dir string, extra ...string) (*wheelmqServer, error) {
	ports, err := reservePorts(3)
	if err != nil {
		return nil, err
	}
	addrs := [3]string{ports[0].Addr(), ports[1].Addr(), ports[2].Addr()}
	args := append([]string{"--data", filepath.Join(dir, "wheelmq-data"), "--listen", addrs[0], "--namesrv-listen", addrs[1],
		"--metrics-listen", addrs[2], "--grpc-listen=", "--flush", "async", "--log-level", "warn", "--log-format", "json"}, extra...)
	s, err := start(ctx, "wheelmq", dir, "http://"+addrs[2]+"/healthz", bin, ports, args...)
	if err != nil {
		return nil, err
	}
	return &wheelmqServer{server: s, broker: addrs[0], namesrv: addrs[1]}, nil
}

// natsServer is nats-server with JetStream on file storage.
type natsServer struct {
	*server
	url string
}

// startNATS runs nats-server with JetStream, its store under dir.
func startNATS(ctx context.Context, bin, dir string) (*natsServer, error) {
	ports, err := reservePorts(2)
	if err != nil {
		return nil, err
	}
	client, monitor := ports[0].Addr(), ports[1].Addr()
	_, port, _ := strings.Cut(client, ":")
	_, mport, _ := strings.Cut(monitor, ":")
	s, err := start(ctx, "nats-server", dir, "http://"+monitor+"/healthz?js-enabled-only=true", bin, ports,
		"-a", "127.0.0.1", "-p", port, "-m", mport, "-js", "-sd", filepath.Join(dir, "nats-data"))
	if err != nil {
		return nil, err
	}
	return &natsServer{server: s, url: "nats://" + client}, nil
}
