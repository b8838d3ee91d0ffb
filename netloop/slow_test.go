package netloop

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// fillHandler answers a request by sending frames of frameSize bytes from
// a goroutine of its own (as a stage would), until frames were sent or a
// send fails. Sends stop early while the connection is congested when
// polite is set (what the broker's handlers do).
type fillHandler struct {
	frames, frameSize int
	polite            bool

	mu      sync.Mutex
	conn    *Conn
	sendErr error
	sent    int
	closed  chan error
	wg      sync.WaitGroup
}

func newFillHandler(frames, frameSize int) *fillHandler {
	return &fillHandler{frames: frames, frameSize: frameSize, closed: make(chan error, 1)}
}

func (h *fillHandler) OnOpen(c *Conn) {
	h.mu.Lock()
	h.conn = c
	h.mu.Unlock()
}

func (h *fillHandler) OnClose(_ *Conn, err error) { h.closed <- err }

func (h *fillHandler) OnCommand(c *Conn, cmd *remoting.Command) {
	if cmd.Field("fill") == "" {
		_ = c.Send(remoting.NewResponse(cmd, remoting.Success, "pong"))
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for range h.frames {
			if h.polite && c.Congested() {
				_ = c.Send(remoting.NewResponse(cmd, remoting.SystemBusy, "busy"))
				continue
			}
			resp := remoting.NewResponse(cmd, remoting.Success, "")
			resp.Body = make([]byte, h.frameSize)
			if err := c.Send(resp); err != nil {
				h.mu.Lock()
				h.sendErr = err
				h.mu.Unlock()
				return
			}
			h.mu.Lock()
			h.sent++
			h.mu.Unlock()
		}
	}()
}

func (h *fillHandler) state() (c *Conn, sent int, sendErr error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn, h.sent, h.sendErr
}

// startCapped starts a server with output caps and one event loop.
func startCapped(t *testing.T, cfg Config, h Handler) *Server {
	t.Helper()
	cfg.Name, cfg.Addr, cfg.NumEventLoop = "test", "127.0.0.1:0", 1
	s := NewServer(cfg, h)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return s
}

// lazyConn dials addr with a small receive buffer, so that what the peer
// does not read stays on the server's side.
func lazyConn(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		// Set before the handshake: shrunk later, Linux stalls the transfer.
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc := conn.(*net.TCPConn)
	t.Cleanup(func() { tc.Close() })
	return tc
}

func fillRequest(t *testing.T, opaque int32) []byte {
	t.Helper()
	c := remoting.NewRequest(remoting.PullMessage, map[string]string{"fill": "1"}, nil)
	c.Opaque = opaque
	b, err := remoting.EncodeFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// drain reads conn until it reports an error (EOF or reset: closed) or the
// deadline passes (nil: still open).
func drain(conn net.Conn, d time.Duration) error {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1<<20)
	for {
		if _, err := conn.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil
			}
			return err
		}
	}
}

// TestSoftCapCongestsUntilThePeerReads fills a connection whose peer does
// not read: its buffered output goes above the soft cap (Congested, and
// the server's gauge) and, once the peer reads everything, back to zero;
// the connection stays open (no hard cap, no stall timeout reached).
func TestSoftCapCongestsUntilThePeerReads(t *testing.T) {
	h := newFillHandler(64, 64<<10) // 4 MiB
	s := startCapped(t, Config{MaxOutput: 256 << 10, MaxOutputHard: 64 << 20, StallTimeout: time.Hour}, h)
	conn := lazyConn(t, s.Addr())
	if _, err := conn.Write(fillRequest(t, 1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every frame sent", func() bool { _, n, _ := h.state(); return n == h.frames })
	c, _, err := h.state()
	if err != nil {
		t.Fatalf("send failed under the hard cap: %v", err)
	}
	if !c.Congested() || c.OutputBuffered() <= 256<<10 || s.Stats().OutputBuffered != c.OutputBuffered() {
		t.Fatalf("unread 4 MiB: congested %v, buffered %d, server gauge %d; want congested above 256 KiB",
			c.Congested(), c.OutputBuffered(), s.Stats().OutputBuffered)
	}
	// Read everything, then a ping makes the event loop look again.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range h.frames {
		if _, err := remoting.ReadFrame(conn, 0); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	ping := remoting.NewRequest(remoting.HeartBeat, nil, nil)
	ping.Opaque = 2
	b, _ := remoting.EncodeFrame(ping)
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
	if resp, err := remoting.ReadFrame(conn, 0); err != nil || resp.Remark != "pong" {
		t.Fatalf("ping: %v %v", resp, err)
	}
	eventually(t, "output drained", func() bool { return !c.Congested() && c.OutputBuffered() == 0 })
	if st := s.Stats(); st.OutputBuffered != 0 || st.SlowClosed != 0 {
		t.Fatalf("after reading: %+v, want nothing buffered and no slow close", st)
	}
}

// TestOutputCaps checks the two ways a connection that does not read is
// closed, and that a peer that reads is never closed, whatever it
// receives in total.
func TestOutputCaps(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		frames     int
		polite     bool
		read       bool
		wantClosed bool
		wantErr    bool // a send failed with ErrOutputFull
	}{
		// hard cap: 256 KiB soft, 1 MiB hard (MaxFrame 128 KiB); 8 MiB unread.
		{name: "hard cap", cfg: Config{MaxFrame: 128 << 10, MaxOutput: 256 << 10, MaxOutputHard: 1 << 20, StallTimeout: time.Hour},
			frames: 128, wantClosed: true, wantErr: true},
		// stalled: the sender stops at the soft cap, the peer never reads.
		{name: "stalled", cfg: Config{MaxOutput: 256 << 10, MaxOutputHard: 64 << 20, StallTimeout: 300 * time.Millisecond},
			frames: 128, polite: true, wantClosed: true},
		// reading: 32 MiB through a 1 MiB hard cap, read as it comes.
		{name: "reading peer", cfg: Config{MaxFrame: 128 << 10, MaxOutput: 256 << 10, MaxOutputHard: 1 << 20, StallTimeout: 300 * time.Millisecond},
			frames: 512, polite: true, read: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFillHandler(tc.frames, 64<<10)
			h.polite = tc.polite
			s := startCapped(t, tc.cfg, h)
			conn := lazyConn(t, s.Addr())
			if _, err := conn.Write(fillRequest(t, 1)); err != nil {
				t.Fatal(err)
			}
			if tc.read {
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				for i := range tc.frames {
					if _, err := remoting.ReadFrame(conn, 0); err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
				}
			}
			// Open: watched over three stall timeouts. Closed: the handler
			// must first fill the output past the soft cap, which a loaded
			// machine (the race detector, busy cores) takes longer to do.
			watch := time.Second
			if tc.wantClosed {
				watch = 15 * time.Second
			}
			select {
			case err := <-h.closed:
				if !tc.wantClosed {
					t.Fatalf("connection closed (%v), want it open", err)
				}
			case <-time.After(watch):
				if c, _, _ := h.state(); tc.wantClosed {
					t.Fatalf("connection still open; buffered %d", c.OutputBuffered())
				}
			}
			h.wg.Wait()
			_, _, err := h.state()
			if got := err != nil; got != tc.wantErr || (got && !errors.Is(err, ErrOutputFull)) {
				t.Fatalf("send error %v, want ErrOutputFull: %v", err, tc.wantErr)
			}
			if tc.wantClosed {
				if err := drain(conn, 5*time.Second); err == nil || (!errors.Is(err, io.EOF) && !isReset(err)) {
					t.Fatalf("peer reads %v, want EOF or reset", err)
				}
			}
			st := s.Stats()
			if want := map[bool]int64{true: 1}[tc.wantClosed]; st.SlowClosed != want {
				t.Fatalf("SlowClosed %d, want %d", st.SlowClosed, want)
			}
			if tc.wantClosed && st.OutputBuffered != 0 {
				t.Fatalf("closed connection still counted: %d bytes buffered", st.OutputBuffered)
			}
		})
	}
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}
