package netloop

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// echoOver sends one request over c and checks the echo.
func echoOver(t *testing.T, c *remoting.Client, body []byte) {
	t.Helper()
	req := remoting.NewRequest(remoting.SendMessage, map[string]string{"k": "v"}, body)
	resp := invoke(t, c, req)
	if resp.Code != remoting.Success || resp.Field("k") != "v" || !bytes.Equal(resp.Body, body) {
		t.Fatalf("echo: code %d fields %v body %d bytes, want the request back", resp.Code, resp.ExtFields, len(resp.Body))
	}
}

// TestTLSModes checks which transports each mode serves, on one port: a
// refused one is closed before the handler sees a request, and counted.
func TestTLSModes(t *testing.T) {
	for _, tc := range []struct {
		mode               TLSMode
		plainOK, tlsOK     bool
		refusedPlain, refT int64
	}{
		{mode: TLSDisabled, plainOK: true, refT: 1},
		{mode: TLSPermissive, plainOK: true, tlsOK: true},
		{mode: TLSEnforcing, tlsOK: true, refusedPlain: 1},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			cfg := Config{TLS: serverTLS(t, tc.mode)}
			if tc.mode == TLSDisabled {
				cfg.TLS.Config = nil
			}
			s := startTLSServer(t, cfg, newEchoHandler())

			// Plaintext.
			if tc.plainOK {
				echoOver(t, dial(t, s.Addr(), remoting.ClientOptions{}), []byte("plain"))
			} else {
				conn := rawConn(t, s.Addr())
				if _, err := conn.Write(mustFrame(t, 1, remoting.SerializeJSON, []byte("x"))); err != nil {
					t.Fatal(err)
				}
				if err := drain(conn, 5*time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
					t.Fatalf("plaintext under %s: peer reads %v, want the connection closed", tc.mode, err)
				}
			}

			// TLS.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := remoting.Dial(ctx, s.Addr(), remoting.ClientOptions{TLS: clientTLS(t)})
			if tc.tlsOK {
				if err != nil {
					t.Fatalf("TLS dial under %s: %v", tc.mode, err)
				}
				defer c.Close()
				echoOver(t, c, []byte("secret"))
			} else if err == nil {
				c.Close()
				t.Fatalf("TLS handshake under %s succeeded, want the connection closed", tc.mode)
			}

			eventually(t, "refusals counted", func() bool {
				st := s.Stats()
				return st.RefusedBy[RefusedPlaintext] == tc.refusedPlain && st.RefusedBy[RefusedTLS] == tc.refT
			})
			st := s.Stats()
			if want := map[bool]int64{true: 1}[tc.tlsOK]; st.TLS != want {
				t.Fatalf("TLS connections %d, want %d", st.TLS, want)
			}
			if want := map[bool]int64{true: 1}[tc.plainOK]; st.Plaintext != want {
				t.Fatalf("plaintext connections %d, want %d", st.Plaintext, want)
			}
		})
	}
}

// TestTLSFramesWholeAndOrdered sends many requests concurrently over one
// TLS connection, bodies from empty to past a TLS record (16 KiB) and past
// a read of gnet's, answered from the event loop and from other
// goroutines: every answer comes back whole, to its own request.
func TestTLSFramesWholeAndOrdered(t *testing.T) {
	s := startTLSServer(t, Config{TLS: serverTLS(t, TLSEnforcing)}, newEchoHandler())
	c := tlsDial(t, s.Addr(), clientTLS(t))
	sizes := []int{0, 1, 100, 16 << 10, 16<<10 + 1, 70 << 10, 1 << 20}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				size := sizes[(g+i)%len(sizes)]
				body := bytes.Repeat([]byte{byte('a' + g)}, size)
				fields := map[string]string{"n": strconv.Itoa(i)}
				if i%3 == 0 {
					fields["delayMs"] = "1"
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := c.Invoke(ctx, remoting.NewRequest(remoting.SendMessage, fields, body))
				cancel()
				if err != nil {
					errs <- err
					return
				}
				if resp.Field("n") != strconv.Itoa(i) || !bytes.Equal(resp.Body, body) {
					errs <- errors.New("answer to another request, or cut")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, "160 frames each way over one open TLS connection, nothing left buffered", func() bool {
		st := s.Stats() // the counters follow the writes the client already read
		return st.FramesIn == 160 && st.FramesOut == 160 && st.TLSOpen == 1 && st.OutputBuffered == 0
	})
}

// TestTLSClientCertificate requires client certificates: a client without
// one, and one whose certificate another CA signed, fail the handshake
// (counted); one with a certificate of the client CA is served.
func TestTLSClientCertificate(t *testing.T) {
	pki := testCerts(t)
	cfg := Config{TLS: serverTLS(t, TLSEnforcing)}
	cfg.TLS.Config.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.TLS.Config.ClientCAs = pki.caPool
	s := startTLSServer(t, cfg, newEchoHandler())

	with := clientTLS(t)
	with.Certificates = []tls.Certificate{pki.client}
	echoOver(t, tlsDial(t, s.Addr(), with), []byte("mutual"))

	other := newTestPKI(t)
	stranger := clientTLS(t)
	stranger.Certificates = []tls.Certificate{other.client}
	for name, cc := range map[string]*tls.Config{"no certificate": clientTLS(t), "another CA's": stranger} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := remoting.Dial(ctx, s.Addr(), remoting.ClientOptions{TLS: cc})
		if err == nil {
			// TLS 1.3: the client finishes first; the server's refusal
			// arrives with the first read.
			_, err = c.Invoke(ctx, remoting.NewRequest(remoting.SendMessage, nil, nil))
			c.Close()
		}
		cancel()
		if err == nil {
			t.Fatalf("%s: request served, want the handshake refused", name)
		}
	}
	eventually(t, "two handshake failures", func() bool { return s.Stats().HandshakeFailures == 2 })
}

// TestTLSStalledHandshakeHoldsNothing opens TLS handshakes that stop
// half-way: each is closed once the handshake timeout passes, and then no
// goroutine of it is left (the event loops were never held).
func TestTLSStalledHandshakeHoldsNothing(t *testing.T) {
	cfg := Config{TLS: serverTLS(t, TLSPermissive)}
	cfg.TLS.HandshakeTimeout = 300 * time.Millisecond
	s := startTLSServer(t, cfg, newEchoHandler())
	plain := dial(t, s.Addr(), remoting.ClientOptions{})
	echoOver(t, plain, nil)
	base := runtime.NumGoroutine()

	const n = 5
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = rawConn(t, s.Addr())
		// The first bytes of a ClientHello record, and nothing more.
		if _, err := conns[i].Write([]byte{0x16, 0x03, 0x01, 0x00, 0x80, 0x01}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the stalled handshakes' goroutines", func() bool { return s.Stats().TLSOpen == n })
	if got := runtime.NumGoroutine(); got < base+n {
		t.Fatalf("%d goroutines with %d handshakes waiting, want at least %d", got, n, base+n)
	}
	// The event loops serve others meanwhile.
	echoOver(t, plain, []byte("still served"))
	for i, conn := range conns {
		if err := drain(conn, 5*time.Second); !errors.Is(err, io.EOF) && !isReset(err) {
			t.Fatalf("stalled handshake %d: peer reads %v, want the connection closed", i, err)
		}
	}
	eventually(t, "goroutines gone", func() bool {
		return s.Stats().TLSOpen == 0 && runtime.NumGoroutine() <= base
	})
	if st := s.Stats(); st.HandshakeFailures != n || st.Conns != 1 {
		t.Fatalf("stats %+v, want %d handshake failures and the plaintext connection alone open", st, n)
	}
}

// TestTLSBadFrameClosesOnlyThatConnection sends an impossible frame inside
// TLS: that connection is closed as a bad frame, others are served.
func TestTLSBadFrameClosesOnlyThatConnection(t *testing.T) {
	h := newEchoHandler()
	s := startTLSServer(t, Config{TLS: serverTLS(t, TLSPermissive)}, h)
	good := tlsDial(t, s.Addr(), clientTLS(t))
	echoOver(t, good, nil)
	<-h.opened

	conn := rawConn(t, s.Addr())
	tc := tls.Client(conn, clientTLS(t))
	if _, err := tc.Write([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Fatal("bad frame answered, want the connection closed")
	}
	select {
	case ev := <-h.closed:
		if !errors.Is(ev.err, ErrBadFrame) {
			t.Fatalf("OnClose cause %v, want ErrBadFrame", ev.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no OnClose")
	}
	echoOver(t, good, []byte("still served"))
	if st := s.Stats(); st.BadFramesBy[BadFrameTooLarge] != 1 {
		t.Fatalf("bad frames %v, want one too large", st.BadFramesBy)
	}
}

// TestTLSOutputCapsApply fills a TLS connection whose peer does not read:
// its buffered output (plaintext queued and records unwritten) passes the
// soft cap (Congested) and the hard cap closes it, as for plaintext.
func TestTLSOutputCapsApply(t *testing.T) {
	h := newFillHandler(128, 64<<10) // 8 MiB unread
	cfg := Config{MaxFrame: 128 << 10, MaxOutput: 256 << 10, MaxOutputHard: 1 << 20, StallTimeout: time.Hour,
		TLS: serverTLS(t, TLSEnforcing)}
	s := startCapped(t, cfg, h)
	tc := tls.Client(lazyConn(t, s.Addr()), clientTLS(t))
	if _, err := tc.Write(fillRequest(t, 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.closed:
	case <-time.After(10 * time.Second):
		c, sent, _ := h.state()
		t.Fatalf("connection still open after %d frames; buffered %d", sent, c.OutputBuffered())
	}
	h.wg.Wait()
	if _, _, err := h.state(); !errors.Is(err, ErrOutputFull) {
		t.Fatalf("send error %v, want ErrOutputFull", err)
	}
	eventually(t, "buffers released", func() bool { st := s.Stats(); return st.OutputBuffered == 0 && st.TLSOpen == 0 })
	if st := s.Stats(); st.SlowClosed != 1 {
		t.Fatalf("SlowClosed %d, want 1", st.SlowClosed)
	}
}

// TestTLSRefuseFlushHangup stops a server with TLS clients the clean way:
// held requests are answered, new ones refused over TLS, and the peers
// read end of file after their answers.
func TestTLSRefuseFlushHangup(t *testing.T) {
	h := &holdHandler{held: make(chan held, 16), body: []byte("answer")}
	s := startTLSServer(t, Config{TLS: serverTLS(t, TLSEnforcing)}, h)
	c := tlsDial(t, s.Addr(), clientTLS(t))
	first := make(chan *remoting.Command, 1)
	if err := c.Go(remoting.NewRequest(remoting.SendMessage, nil, nil), 10*time.Second, func(r *remoting.Command, err error) {
		if err != nil {
			t.Error(err)
		}
		first <- r
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "request held", func() bool { return h.seen.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Refuse(ctx, remoting.SystemBusy, "stopping"); err != nil {
		t.Fatal(err)
	}
	if resp := invoke(t, c, remoting.NewRequest(remoting.SendMessage, nil, nil)); resp.Code != remoting.SystemBusy || resp.Remark != "stopping" {
		t.Fatalf("after Refuse: %d %q, want the refusal", resp.Code, resp.Remark)
	}
	h.answer(t)
	if r := <-first; r.Code != remoting.Success || string(r.Body) != "answer" {
		t.Fatalf("held request: %d %q", r.Code, r.Body)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		<-c.Done()
		c.Close()
	}()
	if err := s.Hangup(ctx); err != nil {
		t.Fatalf("Hangup: %v", err)
	}
	if h.seen.Load() != 1 {
		t.Fatalf("handler saw %d requests, want only the one before Refuse", h.seen.Load())
	}
}

// TestTLSStopWithOpenConnections stops a server while a TLS client is
// connected and another is half-way through its handshake: Stop returns
// once every connection goroutine ended, the handler heard every close,
// and no goroutine is left.
func TestTLSStopWithOpenConnections(t *testing.T) {
	base := runtime.NumGoroutine()
	h := newEchoHandler()
	s := NewServer(Config{Name: "test", Addr: "127.0.0.1:0", NumEventLoop: 2, TLS: serverTLS(t, TLSPermissive)}, h)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remoting.Dial(ctx, s.Addr(), remoting.ClientOptions{TLS: clientTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	echoOver(t, c, nil)
	half, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte{0x16, 0x03, 0x01}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two TLS connections", func() bool { return s.Stats().TLSOpen == 2 })
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st := s.Stats(); st.TLSOpen != 0 || st.Conns != 0 {
		t.Fatalf("after Stop: %+v", st)
	}
	for range 2 {
		select {
		case <-h.closed:
		case <-time.After(5 * time.Second):
			t.Fatal("a TLS connection's OnClose is missing")
		}
	}
	c.Close()
	eventually(t, "goroutines gone", func() bool { return runtime.NumGoroutine() <= base })
}
