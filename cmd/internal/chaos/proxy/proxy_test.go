package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// echoServer is a real TCP echo server; it counts the bytes it received.
type echoServer struct {
	ln  net.Listener
	wg  sync.WaitGroup
	mu  sync.Mutex
	got int
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	var conns sync.Map
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						e.mu.Lock()
						e.got += n
						e.mu.Unlock()
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
		e.wg.Wait()
	})
	return e
}

func (e *echoServer) received() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.got
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New("test", "127.0.0.1:0", target, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and expects it echoed within a second.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read echo of %q: %v", msg, err)
	}
	if string(buf) != msg {
		t.Fatalf("echo %q, want %q", buf, msg)
	}
}

// expectNothing writes msg (when not empty) and expects no byte back within
// wait, with the connection still open.
func expectNothing(t *testing.T, c net.Conn, msg string, wait time.Duration) {
	t.Helper()
	if msg != "" {
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatalf("write into a blackhole: %v (the connection must stay open)", err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through a blackhole: %d bytes %q, err %v; want a timeout on an open connection", n, buf[:n], err)
	}
}

// expectClosed expects c to be closed by the far side within a second.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := bufio.NewReader(c).ReadByte()
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("connection still open after reset: %v", err)
	}
}

func TestPassBlackholeResetPass(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.ln.Addr().String())
	c := dial(t, p.Addr())
	roundTrip(t, c, "hello")

	p.SetMode(Blackhole)
	before := echo.received()
	expectNothing(t, c, "into the void", 300*time.Millisecond)
	if got := echo.received(); got != before {
		t.Fatalf("the target got %d bytes through a blackhole", got-before)
	}
	// A connection opened during the blackhole is accepted and held.
	held := dial(t, p.Addr())
	expectNothing(t, held, "held", 200*time.Millisecond)

	p.SetMode(Pass)
	// Bytes dropped in the blackhole stay dropped; new ones pass on the
	// same connection.
	roundTrip(t, c, "back")
	expectClosed(t, held) // held without a target: closed so that the client dials again

	p.SetMode(Reset)
	expectClosed(t, c)
	r, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err == nil {
		expectClosed(t, r)
		_ = r.Close()
	}

	p.SetMode(Pass)
	roundTrip(t, dial(t, p.Addr()), "after reset")
}

func TestOneWayDrops(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.ln.Addr().String())
	c := dial(t, p.Addr())
	roundTrip(t, c, "x")

	p.SetMode(DropDown)
	before := echo.received()
	expectNothing(t, c, "up only", 300*time.Millisecond)
	if got := echo.received() - before; got != len("up only") {
		t.Fatalf("drop-down: target got %d bytes, want %d (client to target passes)", got, len("up only"))
	}

	p.SetMode(DropUp)
	before = echo.received()
	expectNothing(t, c, "lost", 300*time.Millisecond)
	if got := echo.received(); got != before {
		t.Fatalf("drop-up: the target got %d bytes", got-before)
	}
	p.SetMode(Pass)
	roundTrip(t, c, "ok again")
}

// TestTargetDown: with the target gone, a client connection is closed (as
// a refused connect would be), and it works again once the target is back.
func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p := newProxy(t, addr)
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err == nil { // else refused at once: as good
		defer c.Close()
		expectClosed(t, c)
	}
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	echo := startEcho(t)
	p2 := newProxy(t, echo.ln.Addr().String())
	roundTrip(t, dial(t, p2.Addr()), "up")
}

// TestConcurrentSwitchAndClose flips modes from several goroutines while
// clients write, then closes: every goroutine of the proxy has ended.
func TestConcurrentSwitchAndClose(t *testing.T) {
	echo := startEcho(t)
	base := runtime.NumGoroutine()
	p, err := New("flip", "127.0.0.1:0", echo.ln.Addr().String(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			modes := []Mode{Pass, Blackhole, DropUp, DropDown, Reset}
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				p.SetMode(modes[(i+j)%len(modes)])
				time.Sleep(time.Millisecond)
			}
		}(i)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
				if err != nil {
					continue
				}
				_ = c.SetDeadline(time.Now().Add(20 * time.Millisecond))
				_, _ = c.Write([]byte("ping"))
				_, _ = c.Read(make([]byte, 4))
				_ = c.Close()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("%d goroutines after Close, %d before the proxy", n, base)
	}
}
