package netloop

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// waitClosed waits (at most d) for the handler to see a connection close
// and returns its cause.
func waitClosed(t *testing.T, h *echoHandler, d time.Duration) error {
	t.Helper()
	select {
	case ev := <-h.closed:
		return ev.err
	case <-time.After(d):
		t.Fatal("no connection closed")
		return nil
	}
}

// A raw TCP connection that sends nothing is closed once the idle bound
// passed, on a plaintext port and on a TLS one (permissive and enforcing);
// a connection that spoke is kept.
func TestSilentConnectionsClosed(t *testing.T) {
	for _, mode := range []TLSMode{TLSDisabled, TLSPermissive, TLSEnforcing} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newEchoHandler()
			cfg := Config{IdleTimeout: 150 * time.Millisecond}
			if mode != TLSDisabled {
				cfg.TLS = serverTLS(t, mode)
			}
			s := startTLSServer(t, cfg, h)
			silent, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer silent.Close()
			<-h.opened
			start := time.Now()
			if err := waitClosed(t, h, 5*time.Second); !errors.Is(err, ErrIdle) {
				t.Fatalf("cause %v, want ErrIdle", err)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("closed after %s", el)
			}
			// The peer sees the close.
			_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := silent.Read(make([]byte, 1)); err == nil {
				t.Fatal("the silent connection still reads")
			}
			if st := s.Stats(); st.IdleClosed != 1 {
				t.Fatalf("IdleClosed %d", st.IdleClosed)
			}

			// A connection that spoke stays past the bound.
			var c *remoting.Client
			if mode == TLSEnforcing {
				c = tlsDial(t, s.Addr(), clientTLS(t))
			} else {
				c = dial(t, s.Addr(), remoting.ClientOptions{})
			}
			<-h.opened
			ping := func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if _, err := c.Invoke(ctx, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "t"}, nil)); err != nil {
					t.Fatalf("invoke: %v", err)
				}
			}
			ping()
			time.Sleep(400 * time.Millisecond)
			ping()
			if st := s.Stats(); st.IdleClosed != 1 {
				t.Fatalf("a connection that spoke was closed: IdleClosed %d", st.IdleClosed)
			}
		})
	}
}

// A TLS connection that completes its handshake and then sends no
// request is closed too: the bound is on the first decrypted byte.
func TestSilentAfterHandshakeClosed(t *testing.T) {
	h := newEchoHandler()
	s := startTLSServer(t, Config{IdleTimeout: 150 * time.Millisecond, TLS: serverTLS(t, TLSEnforcing)}, h)
	raw, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.Addr(), clientTLS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	<-h.opened
	if err := waitClosed(t, h, 5*time.Second); !errors.Is(err, ErrIdle) {
		t.Fatalf("cause %v, want ErrIdle", err)
	}
}

// A negative IdleTimeout keeps silent connections.
func TestSilentKeptWhenOff(t *testing.T) {
	h := newEchoHandler()
	s := startTLSServer(t, Config{IdleTimeout: -1}, h)
	silent, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	<-h.opened
	select {
	case ev := <-h.closed:
		t.Fatalf("closed: %v", ev.err)
	case <-time.After(300 * time.Millisecond):
	}
}
